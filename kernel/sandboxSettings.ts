/** How a worker makes the sandbox every lab process runs in (activities/execution/sandbox.ts). */
export interface SandboxSettings {
  /** The bubblewrap binary: a path, or a name looked up on PATH. */
  bwrap: string;
  /** Development only: run lab processes without a sandbox (limits still apply). */
  unsafeNoSandbox: boolean;
  /** Host uids (and gids) handed to sandboxes one each, when the worker runs as root. */
  uidBase: number;
  uidCount: number;
  /** The Python with libseccomp's bindings (Debian's python3-seccomp) that compiles the system-call filter. */
  filterPython: string;
}
