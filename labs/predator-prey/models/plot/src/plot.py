"""Phase plane and conserved quantity of the Lotka-Volterra pair.

Takes the prey and predator densities and the two terms of the invariant,
V = (delta x - gamma ln x) + (beta y - alpha ln y), each computed by the model that owns the
parameters in it (the predator model knows gamma and delta, the prey model alpha and beta).
Everything arrives wired, so one window late; the terms describe the state published one
window before the densities received with them, and this model pairs them accordingly.
"""
from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec


def relative_drift(values, reference):
    """Largest |v - reference| relative to |reference| (absolute when reference is 0)."""
    scale = abs(reference) if reference != 0 else 1.0
    return max((abs(v - reference) for v in values), default=0.0) / scale


def thin(points, limit: int = 2000):
    """At most `limit` points, evenly spaced, always keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    stride = (len(points) - 1) / (limit - 1)
    return [points[round(i * stride)] for i in range(limit)]


class PhasePlot(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self):
        self.states: list[list[float]] = []  # [t, prey, predator]
        self.invariants: list[list[float]] = []  # [t, V]
        self.drift = 0.0

    def inputs(self):
        return {
            "prey": SignalSpec.scalar(dtype="float64", required=False, description="prey density x (wired)"),
            "predator": SignalSpec.scalar(dtype="float64", required=False, description="predator density y (wired)"),
            "prey_potential": SignalSpec.scalar(dtype="float64", required=False, description="delta x - gamma ln x (wired from the predator model)"),
            "predator_potential": SignalSpec.scalar(dtype="float64", required=False, description="beta y - alpha ln y (wired from the prey model)"),
        }

    def outputs(self):
        return {
            "invariant": SignalSpec.scalar(dtype="float64", description="Lotka-Volterra invariant V"),
            "invariant_drift": SignalSpec.scalar(dtype="float64", description="max |V - V(0)| / |V(0)| so far"),
        }

    def setup(self, config=None):
        self.states, self.invariants, self.drift = [], [], 0.0

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            self.states, self.invariants, self.drift = [], [], 0.0
        if "prey" in inputs and "predator" in inputs:
            t = 0.0 if not self.states else context.window_start - context.run_start
            self.states.append([t, float(inputs["prey"].value), float(inputs["predator"].value)])
        if "prey_potential" in inputs and "predator_potential" in inputs and len(self.states) >= 2:
            v = float(inputs["prey_potential"].value) + float(inputs["predator_potential"].value)
            self.invariants.append([self.states[-2][0], v])
            self.drift = max(self.drift, relative_drift([v], self.invariants[0][1]))
            return {"invariant": v, "invariant_drift": self.drift}
        return {}

    def visualize(self):
        if not self.states:
            return None
        states = thin(self.states)
        visuals = [
            {"render": "timeseries", "data": {"x_label": "Time", "y_label": "Density", "series": [
                {"name": "prey", "points": [[t, x] for t, x, _ in states]},
                {"name": "predator", "points": [[t, y] for t, _, y in states]},
            ]}},
            {"render": "scatter", "data": {"x_label": "Prey x", "y_label": "Predator y",
                                           "points": [{"x": x, "y": y} for _, x, y in states]}},
        ]
        if self.invariants:
            visuals.append({"render": "timeseries", "data": {"x_label": "Time", "y_label": "Invariant V", "series": [
                {"name": "V", "points": thin(self.invariants)}]}})
        return visuals
