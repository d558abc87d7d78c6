"""A warm instance's serving, shared by our trusted scripts (driver.py for labs, the PEtab
engine): what is slow to load is loaded once in a pristine process, and each request runs
in a child forked from it, so nothing one request does is seen by the next.

The worker connects to a unix socket per request, sends the request as one JSON line and
reads that request's protocol from the same connection (the child has it as descriptor
3). On descriptor 3 the instance itself says `ready`, and `exited` with each child's exit
code. Lines on stdin control the running child: {"signal": "TERM" | "KILL", "seq": n}, n
the request's number (the first is 1).

Sandboxed (`sweep`: its PID namespace and scratch are its own), each child's traces are
swept before the next one forks, the instance's memory is closed to its children, and only
the worker, from outside the sandbox, may ask for a request.

The sandbox mounts this file beside the script that imports it (activities/execution/sandbox.ts).
"""
import json
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path


def die_with_parent():
    """If the worker that started us dies (even by SIGKILL), die too, at once: nobody is
    left to read our results, and the retried run must not race an orphan. Linux only;
    elsewhere the worker's own kill covers it."""
    try:
        import ctypes
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def set_dumpable(on, emit):
    """Whether processes of the same user may open this one's memory (/proc/PID/mem) and
    descriptors: a warm parent's is closed, so no child it forks can reach it."""
    try:
        import ctypes
        PR_SET_DUMPABLE = 4
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_DUMPABLE, 1 if on else 0)
    except (OSError, AttributeError):
        emit({"type": "error", "code": "sandbox_unavailable", "message": "cannot close the warm instance's memory to its children"})
        sys.exit(2)


def from_outside(conn):
    """Whether the peer is outside this sandbox's PID namespace (the worker: its pid reads
    as 0 here). A child that connects to the socket is refused."""
    import socket
    import struct
    pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid == 0


def sweep_after(workdir, sock_path, listening, emit):
    """Removes what a child left before the next one forks: every process of this sandbox
    this one may signal (itself and the sandbox's init excepted: kill(-1)), then the files
    in /tmp and in the scratch (the worker removes its own staging there). A child that
    replaced the socket ends this instance: the worker starts another."""
    import shutil
    import stat

    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    me = os.getpid()
    uid = os.getuid()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        left = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in (1, me):
                continue
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            if f"\nUid:\t{uid}\t" in status and "\nState:\tZ" not in status:
                left.append(int(entry))
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.005)
    for root in (Path("/tmp"), workdir):
        for entry in root.iterdir():
            if entry == sock_path:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                try:
                    entry.unlink()
                except OSError:
                    pass
    try:
        kept = os.lstat(sock_path)
    except OSError:
        kept = None
    if kept is None or kept.st_ino != listening or not stat.S_ISSOCK(kept.st_mode):
        emit({"type": "error", "code": "instance_lost", "message": "a request replaced the warm instance's socket; the instance ends"})
        sys.stdout.flush()
        os._exit(3)


def serve(workdir, sock_path, sweep, emit, work, report):
    """Serves requests on `sock_path` until the instance is killed, one at a time, each in a
    fork (`run_child`) that calls `work(request, workdir / f"invocation-{seq}")`; `report(exc)`
    says what an exception it raised was. `emit` writes one protocol message (descriptor 3)."""
    import socket
    if sweep:
        set_dumpable(False, emit)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(8)
    listening = os.stat(sock_path).st_ino
    current = [None]

    def control():
        for line in sys.stdin:
            try:
                msg = json.loads(line)
                sig = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL}[msg.get("signal")]
            except (ValueError, KeyError, AttributeError):
                continue
            running = current[0]
            if running and msg.get("seq") in (None, running[1]):
                try:
                    os.killpg(running[0], sig)
                except ProcessLookupError:
                    pass

    threading.Thread(target=control, daemon=True).start()
    emit({"type": "ready", "pid": os.getpid()})
    while True:
        conn, _ = server.accept()
        if sweep and not from_outside(conn):
            conn.close()
            continue
        # The request, read here: the worker numbers its requests, and a signal or a
        # directory names the one it is for.
        conn.settimeout(10)
        try:
            request = json.loads(conn.makefile("r").readline() or "{}")
            seq = int(request.pop("seq"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            conn.close()
            continue
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            server.close()
            run_child(conn, request, workdir / f"invocation-{seq}", emit, work, report)
        conn.close()
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first, a stop finds the group
        except OSError:
            pass
        current[0] = (pid, seq)
        _, status = os.waitpid(pid, 0)
        current[0] = None
        if sweep:
            sweep_after(workdir, sock_path, listening, emit)
        # As bubblewrap reports a cold run's end: a signal's as 128 + its number.
        code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status)
        emit({"type": "exited", "seq": seq, "code": code})


def run_child(conn, request, workdir, emit, work, report):
    """A forked child: its first steps (`enter_child`), then `work(request, workdir)`, its
    exit code that of a cold process (a `SystemExit`'s, or 2 after `report(exc)`); never
    returns."""
    code = 0
    try:
        enter_child(conn, request, workdir, emit)
        work(request, workdir)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # the program's own failure, reported as such
        report(exc)
        code = 2
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def enter_child(conn, request, workdir, emit):
    """A forked child's first steps, before its request's own work: bound to its parent's
    life, its own process group and memory, the connection as descriptor 3, `hello` said
    and the worker's byte read back (it has found this process by its pid before the
    request may end it), and the request's own CPU bound set (`cpu_seconds`, taken out of
    the request: the instance's is its compute profile's longest run's)."""
    die_with_parent()
    # Its own memory as open to its own processes as a cold run's (the parent's stays closed).
    set_dumpable(True, emit)
    # A process group of its own, as a cold run's process is: a stop reaches all of it.
    os.setpgid(0, 0)
    # Its parent's control lines are not its to read: it sees an empty stdin, as a cold run does.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(conn.fileno(), 3)
    conn.close()  # descriptor 3 alone holds the connection: a program that closes it ends it
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    workdir.mkdir(parents=True)
    emit({"type": "hello", "pid": os.getpid()})
    os.read(3, 1)
    cpu = request.pop("cpu_seconds", None)
    if isinstance(cpu, int) and cpu > 0:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or cpu + 5 <= hard:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
