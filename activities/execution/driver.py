"""Silico's lab driver: runs one lab with the biosimulant runtime in this process, inside
the sandbox, and reports to the worker as JSON lines on file descriptor 3, one object per
line (the lab's own stdout and stderr stay what they are and become log lines):

  {"type": "hello"}                                       (first: the sandbox is up)
  {"type": "log", "level": "info", "message": "..."}
  {"type": "progress", "fraction": 0.5, "t": 5.0}
  {"type": "heartbeat"}                                   (at least every 2 s)
  {"type": "series", "name": "...", "points": [[t, v], ...]}   (in chunks, in order)
  {"type": "output", "name": "...", "value": ..., "points": 1234, "public": true}
  {"type": "visual", "visuals": [...]}
  {"type": "result", "status": "completed" | "stopped", "cpu_seconds": 1.23}
  {"type": "error", "code": "...", "message": "..."}        (then a non-zero exit)

Usage: python driver.py ARCHIVE|LAB_DIR WORKDIR < {"inputs": {...}, "seed": 1, "package_sha256": "<hex>"}
(with a LAB_DIR, also "package" and "version"; the folder is packed first)
SIGTERM asks the world to stop between windows; the run then ends as "stopped".
"""
import json
import os
import random
import resource
import signal
import sys
import threading
import time
import errno
import traceback
from pathlib import Path

import forkserve

_out_lock = threading.Lock()
# Descriptor 4 is bubblewrap's report to the worker; the lab has nothing to say on it.
try:
    os.close(4)
except OSError:
    pass
try:
    _protocol = os.fdopen(3, "w", buffering=1)
except OSError:  # run by hand: the protocol goes to stdout
    _protocol = sys.stdout
SERIES_CHUNK = 2000
# What one step may keep of one output in its series: a value of at most this many
# scalars (numbers, booleans, nulls, short strings) is kept whole; a larger record keeps
# its top-level numbers; anything else keeps nothing that step. Its final value is always
# kept whole. A series thus grows linearly with the steps, never with the steps times the
# value (a record holding the whole trajectory so far, every step, is quadratic).
SAMPLE_SCALARS = 64
# Packages already validated in this process (a warm instance's, mounted read-only).
_validated = set()


def emit(obj):
    write_line(json.dumps(obj, default=_jsonable, allow_nan=False))


def write_line(line):
    with _out_lock:
        _protocol.write(line + "\n")
        _protocol.flush()


def _jsonable(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    if hasattr(v, "item"):
        return v.item()
    return str(v)


def _finite(v):
    """JSON has no NaN/Infinity: they are reported as null."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    if isinstance(v, list):
        return [_finite(x) for x in v]
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    return v


def _scalars_within(v, budget):
    """What is left of `budget` once v's scalars are counted, or -1 as soon as v has more:
    the walk stops there, so a value that grows every step costs the same each step."""
    if hasattr(v, "size") and hasattr(v, "tolist"):  # a numpy array, counted without converting it
        return budget - int(v.size)
    if isinstance(v, dict):
        items = v.values()
    elif isinstance(v, (list, tuple)):
        items = v
    elif isinstance(v, str):
        return budget - (len(v) // 16 + 1)
    else:
        return budget - 1
    budget -= 1
    for x in items:
        budget = _scalars_within(x, budget)
        if budget < 0:
            return -1
    return budget


def step_sample(v):
    """What one step keeps of an output's value (SAMPLE_SCALARS), JSON-safe; None for nothing."""
    if _scalars_within(v, SAMPLE_SCALARS) >= 0:
        return (_finite(_jsonable(v) if hasattr(v, "tolist") or hasattr(v, "item") else v),)
    if isinstance(v, dict):
        numbers = {k: _finite(float(x) if isinstance(x, float) else x) for k, x in v.items() if isinstance(x, (int, float)) and not isinstance(x, bool)}
        if numbers and len(numbers) <= SAMPLE_SCALARS:
            return (numbers,)
    return None


def _finite_json(obj):
    """obj as one protocol line, with NaN and Infinity (anywhere in it) as null; the walk
    that replaces them runs only when the first encoding meets one."""
    try:
        return json.dumps(obj, default=_jsonable, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(json.loads(json.dumps(obj, default=_jsonable))), allow_nan=False)


def cpu_seconds():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def fail(code, message):
    emit({"type": "error", "code": code, "message": message[:4000]})
    sys.exit(2)


def _causes(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def limit_code(exc):
    """The sandbox limit behind a failure, if one is: the precise reason for the run error.
    The runtime may wrap a model's exception, so the whole chain is read."""
    for e in _causes(exc):
        if isinstance(e, MemoryError):
            return "memory_limit_exceeded"
        if isinstance(e, OSError) and e.errno == errno.EFBIG:
            return "file_size_limit_exceeded"
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            return "disk_limit_exceeded"
        if isinstance(e, OSError) and e.errno == errno.EMFILE:
            return "open_files_limit_exceeded"
        if isinstance(e, BlockingIOError) and e.errno == errno.EAGAIN:
            return "process_limit_exceeded"
        if isinstance(e, RuntimeError) and "can't start new thread" in str(e):
            return "process_limit_exceeded"
    return None


def check_package(archive, workdir, request):
    """The runtime's validation of a package (or of a managed run's folder, packed here
    first by the runtime's packer) and its digest against the release's: once per
    process, since a warm instance's archive is mounted read-only. Returns the archive."""
    import yaml
    from zipfile import ZipFile
    from biosimulant.pack import build_package, validate_package

    if archive.is_dir():
        archive = build_package(archive, output_path=workdir / "source.bsilab",
                                package_name=request["package"], version=request["version"])
    if archive in _validated:
        return archive
    checked = validate_package(archive)
    if not checked.valid:
        fail("package_invalid", "; ".join(checked.errors))
    with ZipFile(archive) as z:
        digest = yaml.load(z.read("package.yaml"), Loader=_yaml_loader()).get("sha256")
    expected = (request.get("package_sha256") or "").removeprefix("sha256:")
    if expected and digest != expected:
        fail("package_digest_mismatch", f"archive digest {digest} is not the release's {expected}")
    _validated.add(archive)
    return archive


def _yaml_loader():
    import yaml
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def prepare(archive, workdir, inputs):
    """The runtime's steps from a checked package to a world ready to run, with the run's
    inputs applied: the archive unpacked into `workdir`, the run overrides written into
    its lab manifest, and the lab prepared from there (what the runtime's
    `prepare_lab_package` does after its own validation, which `check_package` did).
    Returns the prepared lab and its manifest."""
    import copy
    import yaml
    from zipfile import ZipFile
    from biosim import pack
    from biosim.run_overrides import apply_run_overrides

    root = workdir / "package"
    with ZipFile(archive) as z:
        z.extractall(root)
    package = yaml.load((root / "package.yaml").read_bytes(), Loader=_yaml_loader())
    if package.get("package_type") != "lab":
        fail("package_invalid", f"Expected a lab package, got: {package.get('package_type')}")
    entry = root / package["entry_manifest"]
    saved = yaml.load(entry.read_bytes(), Loader=_yaml_loader())
    manifest = copy.deepcopy(saved)
    # Run inputs are public io.inputs names; the runtime maps them to initial inputs.
    apply_run_overrides(manifest, parameters={"initial_inputs": inputs} if inputs else {}, simulation_config={})
    if manifest != saved:
        entry.write_text(yaml.dump(manifest, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False))
    loaded = pack._LoadedPackage(package_path=archive, package_type="lab", package_yaml=package, manifest=manifest,
                                 unpacked_root=root, payload_root=root / "payload")
    return pack._prepare_lab_loaded_package(loaded, install_deps=False), manifest


def tune_runtime(warm):
    """The runtime parses every manifest with PyYAML's pure-Python loader; its C loader
    (libyaml, the same safe constructor) reads them several times faster. A warm instance
    also reads the installed distributions once: the environment is mounted read-only, so
    which module comes from which distribution cannot change while it lives, and each
    invocation's environment check would otherwise rescan it (tens of milliseconds)."""
    from biosim import pack
    loader = _yaml_loader()

    def safe_yaml_load(data):
        import yaml
        loaded = yaml.load(data, Loader=loader) or {}
        if not isinstance(loaded, dict):
            raise pack.PackageError("YAML document must be a mapping")
        return loaded

    pack._safe_yaml_load = safe_yaml_load
    if warm:
        from importlib import metadata
        table = metadata.packages_distributions()
        metadata.packages_distributions = lambda: {k: list(v) for k, v in table.items()}


def main():
    forkserve.die_with_parent()
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        return serve(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    emit({"type": "hello", "pid": os.getpid()})
    archive, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    tune_runtime(warm=False)
    run_request(archive, workdir, json.loads(sys.stdin.read() or "{}"))


def run_request(archive, workdir, request, checked=False):
    """One run of the lab: seeded, prepared with its inputs, run to its end, reported.
    `checked`: the archive is one its warm parent checked already."""
    inputs = request.get("inputs") or {}
    seed = int(request.get("seed") or 0)
    random.seed(seed)
    os.environ["SILICO_SEED"] = str(seed)
    try:
        import numpy
        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    done = threading.Event()

    def beat():
        while not done.wait(2.0):
            emit({"type": "heartbeat"})

    threading.Thread(target=beat, daemon=True).start()

    from biosimulant import WorldEvent
    from biosim._errors import PackageError

    try:
        prepared, manifest = prepare(archive if checked else check_package(archive, workdir, request), workdir, inputs)
    except PackageError as exc:  # the runtime refused the lab's package: the author's to fix
        cause = missing_module_error(exc)
        if cause:
            # A module its code imports as it loads, missing from its environment: taught as
            # a run's own import of it would be (the worker names the distribution).
            missing = missing_module(cause)
            message = f"{missing_module_message(missing)}\n{lab_traceback(cause)}"
            emit({"type": "error", "code": "package_invalid", "message": message[:4000], "missing_module": missing})
            sys.exit(2)
        fail("package_invalid", f"{exc}")
    world = prepared.world

    outputs = [o for o in (manifest.get("io") or {}).get("outputs") or []
               if isinstance(o, dict) and isinstance(o.get("name"), str) and isinstance(o.get("maps_to"), str)]
    # Time series leave in chunks as they grow, so neither this process nor one message
    # holds a long trajectory; the worker streams them to the object store.
    series = {o["name"]: [] for o in outputs}
    counts = {o["name"]: 0 for o in outputs}
    finals = {}
    # What is sampled after every step, worked out once: (name, alias, port). An alias may
    # hold dots and a port may not: the runtime splits a reference at its last dot too.
    sampled = [(o["name"], *o["maps_to"].rpartition(".")[::2]) for o in outputs]

    def flush(name):
        if series[name]:
            counts[name] += len(series[name])
            emit({"type": "series", "name": name, "points": series[name]})
            series[name] = []

    def sample(t):
        for name, alias, port in sampled:
            signal_ = world.get_outputs(alias).get(port)
            if signal_ is not None:
                v = signal_.value
                # The value as it stands: made JSON-safe once, when the run ends.
                finals[name] = v
                if type(v) is float:
                    if v - v != 0.0:  # NaN or +-Infinity: JSON has neither
                        v = None
                elif type(v) is not int:
                    kept = step_sample(v)
                    if kept is None:
                        continue
                    v = kept[0]
                points = series[name]
                points.append([t, v])
                if len(points) >= SERIES_CHUNK:
                    flush(name)

    last_progress = [0.0]

    def listener(event, payload):
        if stop.is_set():
            world.request_stop()
        if event is WorldEvent.STEP:
            sample(payload.get("t", 0.0))
            now = time.monotonic()
            if now - last_progress[0] >= 0.2 or payload.get("progress", 0) >= 1:
                last_progress[0] = now
                emit({"type": "progress", "fraction": float(payload.get("progress", 0.0)), "t": float(payload.get("t", 0.0))})
        elif event is WorldEvent.ERROR:
            emit({"type": "log", "level": "error", "message": str(payload.get("error"))})
        else:
            emit({"type": "log", "level": "info", "message": f"world {event.value} at t={payload.get('t')}"})

    world.on(listener)
    emit({"type": "log", "level": "info", "message": f"running {prepared.package}@{prepared.version} for {prepared.duration} (step {prepared.communication_step})"})
    world.run(duration=prepared.duration)
    if prepared.settle_steps and not stop.is_set():
        world.settle(prepared.settle_steps)
        sample(world.current_time)
    for o in outputs:
        flush(o["name"])
        write_line(_finite_json({"type": "output", "name": o["name"], "value": finals.get(o["name"]), "points": counts[o["name"]],
                                 "public": o.get("public", True) is not False}))
    try:
        write_line(_finite_json({"type": "visual", "visuals": world.collect_visuals()}))
    except Exception as exc:  # visuals are optional; a broken one is a warning, not a failure
        emit({"type": "log", "level": "warning", "message": f"visuals unavailable: {exc}"})
    done.set()
    emit({"type": "result", "status": "stopped" if stop.is_set() else "completed", "cpu_seconds": cpu_seconds()})


def serve(archive, workdir, sock_path):
    """A warm instance (forkserve.py): the runtime imported and the package checked once,
    then one invocation at a time, each in a child forked from this pristine process."""
    warm = json.loads(sys.stdin.readline() or "{}")
    # What every invocation needs, loaded once. The lab's own modules are not: importing
    # or constructing them here could run its code once for all invocations, and a lab
    # must behave as in a cold run.
    import yaml  # noqa: F401
    from biosimulant import WorldEvent  # noqa: F401
    from biosim import pack  # noqa: F401
    from biosim.run_overrides import apply_run_overrides  # noqa: F401
    try:
        import numpy.random  # noqa: F401  (every invocation seeds it)
    except ImportError:
        pass
    tune_runtime(warm=True)
    checked = check_package(archive, workdir, warm)
    # A folder packed here (a managed run's) is kept in this process's memory, and each
    # child writes its own copy: a file in the scratch could be changed by one child for
    # the next.
    packed = None
    if checked != archive:
        packed = checked.read_bytes()
        checked.unlink()
    forkserve.serve(workdir, sock_path, bool(warm.get("sweep")), emit,
                    lambda request, child_dir: invocation(request, checked, packed, child_dir), report_failure)


def invocation(request, archive, packed, workdir):
    """One request in a forked child of a warm instance (forkserve.run_child). `packed`: the
    bytes of the package its parent packed, written to this child's own directory."""
    if packed is not None:
        archive = workdir / "source.bsilab"
        archive.write_bytes(packed)
    run_request(archive, workdir, request, checked=True)


# How many of a failure's innermost frames its report shows (the lab's and its packages').
SHOWN_FRAMES = 8


def lab_traceback(exc):
    """The failure's traceback without this driver's frames: the author's code and the
    packages it uses, innermost last, as Python prints them."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    lines = traceback.format_list(frames[-SHOWN_FRAMES:])
    return "Traceback (most recent call last):\n" + "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc))


def distribution_of(module_name):
    """The installed distribution a module comes from, and its version, if one is known."""
    from importlib import metadata

    top = module_name.split(".")[0]
    for dist in metadata.packages_distributions().get(top, []):
        try:
            return {"distribution": dist, "version": metadata.version(dist)}
        except metadata.PackageNotFoundError:
            continue
    return {}


def missing_module_error(exc):
    """The ModuleNotFoundError naming a module anywhere in the failure's chain, or None."""
    return next((e for e in _causes(exc) if isinstance(e, ModuleNotFoundError) and e.name), None)


def missing_module(exc):
    """A module the lab (or a package it uses) imports and its environment lacks: its name
    and who imports it (the innermost frame outside the import machinery), or None."""
    found = missing_module_error(exc)
    if found is None:
        return None
    frames = [f for f in traceback.walk_tb(found.__traceback__) if not f[0].f_code.co_filename.startswith("<frozen")]
    report = {"module": found.name}
    if frames:
        frame, line = frames[-1]
        importer = frame.f_globals.get("__name__", "")
        report["imported_by"] = {"module": importer, "file": frame.f_code.co_filename, "line": line, **distribution_of(importer)}
    return report


def report_failure(exc):
    code = limit_code(exc)
    missing = None
    try:
        missing = missing_module(exc)
        # The first line says what happened; the lab's traceback follows.
        first = missing_module_message(missing) if missing else f"{type(exc).__name__}: {exc}"
        message = f"{first}\n{lab_traceback(exc)}"
    except MemoryError:
        message = type(exc).__name__
    emit({"type": "error", "code": code or "lab_error", "message": message[:4000], **({"missing_module": missing} if missing else {})})


def missing_module_message(missing):
    """What the author reads first: the module, who imports it, and what to declare. The
    worker names the distribution on the package index when it knows one."""
    by = missing.get("imported_by") or {}
    who = f"{by['distribution']} {by['version']} ({by['module']})" if by.get("distribution") else (by.get("module") or "the lab")
    return (f"No module named '{missing['module']}': {who} imports it and this lab's environment does not hold it. "
            f"Declare the distribution that provides it in runtime.dependencies.packages of the model that needs it.")


if __name__ == "__main__":
    try:
        main()
        # All is reported: leave without the interpreter's teardown (tens of milliseconds
        # freeing modules nobody uses again), once the lab's own streams are flushed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    except SystemExit:
        raise
    except BaseException as exc:  # the lab's own failure, reported as such
        report_failure(exc)
        sys.exit(2)
