"""The runtime's own judgement of a lab, for plans: a long-lived process that reads one
JSON line per check, {"id": n, "dir": "<a lab folder>"}, and answers
{"id": n, "errors": ["<the runtime's message>", ...]} (empty when the runtime accepts it).

The folder holds a lab's manifests (lab.yaml, model.yaml files, a package-backed child's
lock) as written, and an empty stand-in for each of its other files, so every path resolves
as it does in the lab. The judge is the runtime's own `validate_lab_source`, the check of
`biosimulant labs validate`: the lab manifest, every embedded model and child lab, pins,
execution phases along the wiring, declared port compatibility, the declared package and
version. No code of the lab is there to be read, so nothing a model's source would show
is held against it here; the runtime's packer judges that too, sandboxed, when the lab is
packed. Warnings are not verdicts and are not reported.

Messages name files relative to the folder, never where the folder happens to be.

Usage: python manifestCheck.py
"""
import json
import sys
from pathlib import Path

from biosim.pack import validate_lab_source


def judge(lab: Path) -> list[str]:
    root = str(lab.resolve())
    return [message.replace(f"{root}/", "").replace(root, ".") for message in validate_lab_source(lab).errors]


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"id": request["id"], "errors": judge(Path(request["dir"]))}
        except Exception as exc:  # a check that broke is not a verdict: the caller says so
            answer = {"id": request["id"], "failure": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


main()
