"""bench:sweep baseline: a lab's parameter sets run by the runtime alone, in this one
interpreter, one after another: the lab folder packed once by the runtime's packer, then
for each set the runtime's own steps from a package to a finished world (unpack, the set
written into the lab manifest as its run inputs, prepare, run for the lab's duration),
with no sandbox, no protocol and no service.

Usage: python sweepDirect.py LAB_DIR SETS_JSON OUTPUT
SETS_JSON holds a list of input objects; OUTPUT names the one output read from each
finished world (`alias.port`). Prints {"values": [...]}, in the sets' order.
"""
import copy
import json
import shutil
import sys
import tempfile
from pathlib import Path
from zipfile import ZipFile

import yaml
from biosim import pack
from biosim.run_overrides import apply_run_overrides
from biosimulant.pack import build_package

lab, sets_file, output = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
alias, _, port = output.rpartition(".")
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
work = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
archive = build_package(lab, output_path=work / "lab.bsilab", package_name="bench/sweep", version="1.0.0")
values = []
for i, inputs in enumerate(json.loads(Path(sets_file).read_text())):
    root = work / f"run-{i}"
    with ZipFile(archive) as z:
        z.extractall(root)
    package = yaml.load((root / "package.yaml").read_bytes(), Loader=loader)
    entry = root / package["entry_manifest"]
    manifest = copy.deepcopy(yaml.load(entry.read_bytes(), Loader=loader))
    apply_run_overrides(manifest, parameters={"initial_inputs": inputs}, simulation_config={})
    entry.write_text(yaml.safe_dump(manifest, sort_keys=False))
    loaded = pack._LoadedPackage(package_path=archive, package_type="lab", package_yaml=package, manifest=manifest,
                                 unpacked_root=root, payload_root=root / "payload")
    prepared = pack._prepare_lab_loaded_package(loaded, install_deps=False)
    prepared.world.run(duration=prepared.duration)
    values.append(prepared.world.get_outputs(alias)[port].value)
    shutil.rmtree(root)
shutil.rmtree(work)
print(json.dumps({"values": values}))
