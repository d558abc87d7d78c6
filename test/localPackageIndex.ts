import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { canonicalName } from '../storage/runtimePins.ts';

/** One release a local index serves: a wheel built here, listed as uploaded at `uploaded`. */
export interface IndexRelease { name: string; version: string; dependencies?: string[]; module: string; source: string; uploaded: string }

/** A local package index: its simple URL, the project pages it was asked for, and its end. */
export interface LocalIndex { url: string; asked: string[]; close(): Promise<void> }


/**
 * A package index (PEP 691's JSON simple API, with PEP 700 upload times) serving wheels
 * built here by uv from `releases`, at the upload times they name; any other project's
 * page is PyPI's own, passed through (its files stay on PyPI's hosts). So a resolution can
 * meet releases with the history a test needs beside the ecosystem's real ones.
 */
export async function startLocalIndex(releases: IndexRelease[]): Promise<LocalIndex> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'silico-index-'));
  const files = new Map<string, Buffer>();
  const projects = new Map<string, Array<{ version: string; filename: string; sha256: string; uploaded: string }>>();
  for (const r of releases) {
    const src = path.join(work, `${canonicalName(r.name)}-${r.version}`);
    await mkdir(path.join(src, 'src', r.module), { recursive: true });
    await writeFile(path.join(src, 'pyproject.toml'), [
      '[project]', `name = "${r.name}"`, `version = "${r.version}"`, 'requires-python = ">=3.9"',
      `dependencies = [${(r.dependencies ?? []).map((d) => JSON.stringify(d)).join(', ')}]`, '',
      '[build-system]', 'requires = ["uv_build>=0.9,<0.14"]', 'build-backend = "uv_build"', '',
      '[tool.uv.build-backend]', `module-name = "${r.module}"`, '',
    ].join('\n'));
    await writeFile(path.join(src, 'src', r.module, '__init__.py'), r.source);
    const out = path.join(src, 'dist');
    await promisify(execFile)(process.env.SILICO_UV!, ['build', '--wheel', '--quiet', '--out-dir', out, src], { env: { PATH: '/usr/bin:/bin', HOME: work, UV_CACHE_DIR: path.join(work, 'uv-cache'), UV_NO_CONFIG: '1' } });
    const filename = (await readdir(out)).find((f) => f.endsWith('.whl'));
    const bytes = await readFile(path.join(out, filename!));
    files.set(filename!, bytes);
    const list = projects.get(canonicalName(r.name)) ?? [];
    list.push({ version: r.version, filename: filename!, sha256: createHash('sha256').update(bytes).digest('hex'), uploaded: r.uploaded });
    projects.set(canonicalName(r.name), list);
  }
  const asked: string[] = [];
  let base = '';
  const server = createServer((req, res) => {
    void (async () => {
      const page = /^\/simple\/([^/]+)\/$/.exec(req.url ?? '');
      const file = /^\/files\/([^/]+)$/.exec(req.url ?? '');
      if (file && files.has(file[1]!)) {
        res.setHeader('Content-Type', 'application/octet-stream');
        return res.end(files.get(file[1]!));
      }
      if (!page) {
        res.statusCode = 404;
        return res.end('not found');
      }
      const name = canonicalName(page[1]!);
      asked.push(name);
      const own = projects.get(name);
      if (own) {
        res.setHeader('Content-Type', 'application/vnd.pypi.simple.v1+json');
        return res.end(JSON.stringify({
          meta: { 'api-version': '1.1' }, name, versions: own.map((r) => r.version),
          files: own.map((r) => ({ filename: r.filename, url: `${base}/files/${r.filename}`, hashes: { sha256: r.sha256 }, 'upload-time': r.uploaded })),
        }));
      }
      const upstream = await fetch(`https://pypi.org/simple/${name}/`, { headers: { Accept: 'application/vnd.pypi.simple.v1+json' } });
      res.statusCode = upstream.status;
      res.setHeader('Content-Type', upstream.headers.get('content-type') ?? 'application/vnd.pypi.simple.v1+json');
      res.end(Buffer.from(await upstream.arrayBuffer()));
    })().catch((err: Error) => {
      res.statusCode = 502;
      res.end(err.message);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/simple`,
    asked,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(work, { recursive: true, force: true });
    },
  };
}
