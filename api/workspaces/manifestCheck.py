"""The runtime's own judgement of a lab, for plans: a long-lived process that reads one
JSON line per check, {"id": n, "dir": "<a lab folder>"}, and answers
{"id": n, "errors": ["<the runtime's message>", ...], "entrypoints": [...]} (errors empty
when the runtime accepts it; then entrypoints: each model whose entrypoint names no file
of the lab, below).

The folder holds a lab's manifests (lab.yaml, model.yaml files, a package-backed child's
lock) as written, and an empty stand-in for each of its other files, so every path resolves
as it does in the lab. The judge is the runtime's own `validate_lab_source`, the check of
`biosimulant labs validate`: the lab manifest, every embedded model and child lab, pins,
execution phases along the wiring, declared port compatibility, the declared package and
version. No code of the lab is there to be read, so nothing a model's source would show
is held against it here; the runtime's packer judges that too, sandboxed, when the lab is
packed. Warnings are not verdicts and are not reported.

Where a model's entrypoint module is, the runtime says without reading code: its model's
folder holds `<module path>.py` or `<module path>/__init__.py` (`entrypoint_source_path`),
which the stand-ins show as well as the files would. An entrypoint that names neither is
reported: the runtime would import it from the lab's environment instead, where a lab's
own modules are not. Its validation does not say so; the lab fails when it is loaded.

Messages name files relative to the folder, never where the folder happens to be.

Usage: python manifestCheck.py
"""
import json
import sys
from pathlib import Path

from biosim.execution import entrypoint_source_path
from biosim.pack import _find_manifest_in_dir, _flatten_embedded_lab_dir, _safe_yaml_load, validate_lab_source

# The names the runtime reads a model's manifest under, in its order (_load_model_manifest_from_dir).
MODEL_MANIFESTS = ("model.yaml", "model.yml", "biosim.yaml", "biosim.yml")


def judge(lab: Path) -> list[str]:
    root = str(lab.resolve())
    return [message.replace(f"{root}/", "").replace(root, ".") for message in validate_lab_source(lab).errors]


def unresolved_entrypoints(lab: Path) -> list[dict]:
    """Each model (child labs' too, as the runtime lays the lab out) whose entrypoint names
    no file of the lab: {"manifest", "entrypoint", "module"}, with the file the module would
    be, relative to the lab ("module" is null when the entrypoint is not `module:Class`).
    None are reported when the runtime cannot lay the lab out: its errors say why."""
    root = lab.resolve()
    try:
        models, _, _ = _flatten_embedded_lab_dir(payload_root=root, current_lab_dir=root)
    except Exception:
        return []
    found = []
    for entry in models:
        model_dir = Path(str(entry["model_dir"]))
        try:
            manifest = _find_manifest_in_dir(model_dir, MODEL_MANIFESTS)
            entrypoint = (_safe_yaml_load(manifest.read_bytes()).get("biosim") or {}).get("entrypoint")
        except Exception:  # the runtime's errors name an unreadable manifest
            continue
        if not isinstance(entrypoint, str) or not entrypoint.strip():
            continue
        source, symbol = entrypoint_source_path(model_dir, entrypoint)
        if source is not None:
            continue
        module = entrypoint.partition(":")[0] if ":" in entrypoint else entrypoint.rpartition(".")[0]
        found.append({
            "manifest": manifest.relative_to(root).as_posix(), "entrypoint": entrypoint,
            "module": (model_dir.relative_to(root) / Path(*module.split("."))).as_posix() + ".py" if symbol else None,
        })
    return found


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            lab = Path(request["dir"])
            errors = judge(lab)
            # Read only of a lab the runtime accepts: a refused one (a YAML bomb) is not parsed twice.
            answer = {"id": request["id"], "errors": errors, "entrypoints": [] if errors else unresolved_entrypoints(lab)}
        except Exception as exc:  # a check that broke is not a verdict: the caller says so
            answer = {"id": request["id"], "failure": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


main()
