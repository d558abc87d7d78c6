"""Generic BioModules for the differential tests of lab.yaml (test/differential/).

Their ports are the ones their own model.yaml declares under io.inputs / io.outputs, so
the runtime's wiring checks (WiringBuilder.apply) judge real ports: a wire to a port the
model.yaml names exists, one to any other port does not. Parameters from lab.yaml are
accepted whatever their names. One class per execution policy, each stated as a literal
the runtime reads from the source, so the runtime's phase rules (a model that runs once
after the run feeds nothing that runs each window) have something to judge. The judge
prepares a lab and runs its first window; nothing here computes anything.
"""
from pathlib import Path

import yaml
from biosimulant import BioModule, ExecutionPolicy, SignalSpec


def _names(direction):
    manifest = yaml.safe_load((Path(__file__).resolve().parent.parent / "model.yaml").read_bytes()) or {}
    io = manifest.get("io") if isinstance(manifest.get("io"), dict) else {}
    ports = io.get(direction) if isinstance(io.get(direction), list) else []
    return [p["name"] for p in ports if isinstance(p, dict) and isinstance(p.get("name"), str)]


class Generic(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, **parameters):
        self.parameters = parameters

    def inputs(self):
        return {name: SignalSpec.scalar(dtype="float64", required=False) for name in _names("inputs")}

    def outputs(self):
        return {name: SignalSpec.scalar(dtype="float64") for name in _names("outputs")}

    def execute(self, inputs, *, context):
        return {name: 0.0 for name in _names("outputs")}


class GenericBefore(Generic):
    execution_policy = ExecutionPolicy.ONCE_BEFORE_RUN


class GenericAfter(Generic):
    execution_policy = ExecutionPolicy.ONCE_AFTER_RUN
