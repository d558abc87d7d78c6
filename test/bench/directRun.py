"""bench:labs baseline: one lab package run directly with the pinned runtime, the runtime's
own way (biosim.pack.run_package: unpack, build the world, run it for the lab's duration,
collect every module's outputs and the visuals), in the same sandbox a run gets.

Usage: python directRun.py ARCHIVE WORKDIR
Writes {"type": "hello"} first and {"type": "result", ...} last on file descriptor 3, the
two messages runLabProcess needs to tell a finished process from one that never started;
nothing is sent per step. Stdout gets one summary line.
"""
import json
import os
import resource
import sys
from pathlib import Path

protocol = os.fdopen(3, "w", buffering=1)
protocol.write(json.dumps({"type": "hello"}) + "\n")

from biosim.pack import run_package  # noqa: E402

archive, workdir = sys.argv[1], Path(sys.argv[2])
result = run_package(archive, install_deps=False, unpack_root=workdir / "unpacked")
steps = round(result["duration"] / result["communication_step"])
prey = result["outputs"]["prey"]["prey"]["value"]
print(json.dumps({"steps": steps, "final_prey": prey, "visuals": len(result["visuals"] or [])}))
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
protocol.write(json.dumps({"type": "result", "status": "completed", "cpu_seconds": cpu}) + "\n")
