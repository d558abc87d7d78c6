import { defineConfig } from 'vite';

/**
 * The console bundle the api serves at /console. The SDK is imported as written: its
 * Node-only parts (writing files, reading paths, signing checks) load `node:*` modules on
 * use, never at import, so they stay out of the browser's way as external chunks no
 * page loads.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 400,
    rollupOptions: {
      external: [/^node:/],
      // An unused import of a Node module (the SDK's passport check) is dropped, not kept for effects.
      treeshake: { moduleSideEffects: (_id: string, external: boolean) => !external },
    },
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
});
