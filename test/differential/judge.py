"""The runtime's side of the differential tests of lab.yaml (test/differential/): one
long-lived process that judges lab source trees with the pinned runtime (biosimulant),
so that a hundred thousand of them cost one interpreter start, not one each.

Reads one JSON object a line on stdin:
  {"id": 7, "files": {"lab.yaml": "...", "models/a/model.yaml": "...", ...},
   "identity": {"package": "ns/lab" | null, "version": "0.0.1" | null}, "gate": true}
writes one JSON object a line on stdout, in the same order:
  {"id": 7,
   "source":  {"valid": bool, "errors": [...]},        biosim.pack.validate_lab_source: the judge
   "gate":    {"valid": bool|null, "error": str|null}, the service's own pack step, run as is
   "start":   {"ok": bool|null, "error": str|null}}    the runtime's prepare and first window

- source: the runtime's validator of a lab source tree, the judge of the lab format.
- gate: activities/execution/pack.py, executed in this process with the identity the
  service passes (storage/labIdentity.ts packerIdentity). It is what stands between a
  plan and a run: publication packs with it, and a managed (workspace) run's driver makes
  the same two runtime calls (build_package, then validate_package) before it prepares.
- start: what the driver does next (activities/execution/driver.py prepare, then
  world.run): the runtime's _prepare_lab_loaded_package (install_deps=False) on the same
  files, which imports the models, builds the world and applies the wiring, then one
  communication window of world.run, which checks the execution phases first. Only when
  the source or the gate accepts (otherwise nothing would reach it); null when skipped.
A request says `"gate": false` when the service's plans already block the lab: then no
run can reach the gate, and the gate is skipped (null).

Usage: python judge.py PACK_PY
"""
import contextlib
import copy
import functools
import io
import json
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from pathlib import Path, PurePosixPath

# Responses go to a private copy of stdout; anything else that writes to fd 1 (a model, a
# runtime warning) lands on stderr and cannot corrupt the protocol.
_protocol = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import yaml  # noqa: E402
from importlib import metadata  # noqa: E402
from biosim import pack  # noqa: E402  (after the descriptors are set)

# The runtime's advisories (a model that does not declare its execution policy) are not verdicts.
warnings.simplefilter("ignore")

# Speed, never a different verdict. The runtime parses each manifest of a lab several
# times over (validate, pack, prepare: about 25 PyYAML parses a lab) and scans every
# installed distribution on each prepare. Both are functions of what they read: the same
# text gives the same document (each caller gets a deep copy, so none sees another's
# changes; a text that fails to parse is parsed again, raising as before), and the
# judge's environment does not change while it runs.
_parse = yaml.safe_load
_parsed = {}


def _safe_load(stream):
    if not isinstance(stream, (str, bytes)):
        return _parse(stream)
    if stream not in _parsed:
        if len(_parsed) > 256:
            _parsed.clear()
        _parsed[stream] = _parse(stream)
    return copy.deepcopy(_parsed[stream])


yaml.safe_load = _safe_load
metadata.packages_distributions = functools.cache(metadata.packages_distributions)

PACK_PY = Path(sys.argv[1]).resolve()
PACK_CODE = compile(PACK_PY.read_text(encoding="utf-8"), str(PACK_PY), "exec")
# tmpfs when there is one: a lab is written, read a few times and removed.
BASE = Path(tempfile.mkdtemp(prefix="silico-differential-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))


def write_tree(root, files):
    for name, text in files.items():
        rel = PurePosixPath(name)
        # The generator's own paths; a bad one is its bug, not a verdict.
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"unsafe path from the generator: {name!r}")
        target = root.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def judge_source(lab):
    result = pack.validate_lab_source(lab)
    return {"valid": bool(result.valid), "errors": [str(e) for e in result.errors]}


def judge_gate(lab, scratch, identity):
    """pack.py as the service runs it (LAB OUT PACKAGE VERSION), in this process."""
    saved = sys.argv
    sys.argv = [str(PACK_PY), str(lab), str(scratch / "package.bsilab"), identity.get("package") or "", identity.get("version") or ""]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(PACK_CODE, {"__name__": "__main__", "__file__": str(PACK_PY)})
    except SystemExit:
        pass  # pack.py reports a refusal as JSON, then exits 2
    except Exception as exc:  # a crash of pack.py: the service would fail the step too
        return {"valid": False, "error": f"pack.py crashed: {type(exc).__name__}: {exc}"}
    finally:
        sys.argv = saved
    lines = [line for line in printed.getvalue().splitlines() if line.strip()]
    try:
        answer = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"valid": False, "error": f"pack.py printed no result: {printed.getvalue()[-300:]!r}"}
    return {"valid": "error" not in answer, "error": answer.get("error")}


def judge_start(lab, scratch):
    manifest = pack._safe_yaml_load((lab / "lab.yaml").read_bytes())
    # Package-backed children resolve through the Hub (the network): never here.
    if pack._package_children(manifest):
        return {"ok": None, "error": "skipped: package-backed children resolve through the Hub"}
    loaded = pack._LoadedPackage(
        package_path=scratch / "source.bsilab", package_type="lab",
        package_yaml={"package": "local/lab", "version": "0.1.0"}, manifest=manifest,
        unpacked_root=lab, payload_root=lab,
    )
    prepared = pack._prepare_lab_loaded_package(loaded, install_deps=False)
    # One window whatever the lab's duration: the start of a run, not the run.
    prepared.world.run(duration=prepared.communication_step)
    return {"ok": True, "error": None}


def judge(request):
    work = BASE / str(request["id"])
    lab, scratch = work / "lab", work / "scratch"
    try:
        lab.mkdir(parents=True)
        scratch.mkdir()
        write_tree(lab, request["files"])
        source = judge_source(lab)
        gate = {"valid": None, "error": None}
        if request.get("gate", True):
            gate = judge_gate(lab, scratch, request.get("identity") or {})
        start = {"ok": None, "error": None}
        # "when_needed": only where the start decides a failure (the validator refused, the
        # gate let it through: does it run unjudged?), which keeps 100,000 labs affordable.
        wanted = source["valid"] or gate["valid"] if request.get("start", "always") == "always" else (not source["valid"] and gate["valid"])
        if wanted:
            try:
                start = judge_start(lab, scratch)
            except Exception as exc:  # whatever the runtime raises: the run would fail at its start
                start = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        answer = {"id": request["id"], "source": source, "gate": gate, "start": start}
        # The judge's folder is no part of a verdict: messages name the lab's own paths.
        return json.loads(json.dumps(answer).replace(json.dumps(str(lab))[1:-1], "<lab>"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            try:
                answer = judge(request)
            except Exception:
                answer = {"id": request.get("id"), "crash": traceback.format_exc()[-4000:]}
            _protocol.write(json.dumps(answer) + "\n")
    finally:
        shutil.rmtree(BASE, ignore_errors=True)


if __name__ == "__main__":
    main()
