"""Predator population of a Lotka-Volterra pair: dy/dt = delta x y - gamma y.

The prey density x arrives on the wired `prey` input, one communication window after the prey
model published it; src/lv_scheme.py explains how the window is integrated.
"""
import math

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec

from src.lv_scheme import Population


def prey_potential(x: float, gamma: float, delta: float) -> float:
    """The prey's term of the Lotka-Volterra invariant, delta x - gamma ln x."""
    return delta * x - gamma * math.log(x)


class Predator(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, gamma: float = 0.4, delta: float = 0.1, initial_predator: float = 10.0):
        self.gamma, self.delta, self.y0 = float(gamma), float(delta), float(initial_predator)
        self.population = None
        self.history: list[list[float]] = []

    def inputs(self):
        return {
            "initial_predator": SignalSpec.scalar(dtype="float64", required=False, description="initial predator density"),
            "gamma": SignalSpec.scalar(dtype="float64", required=False, description="predator death rate gamma (1/time)"),
            "delta": SignalSpec.scalar(dtype="float64", required=False, description="predator growth per prey delta (1/(prey time))"),
            "prey": SignalSpec.scalar(dtype="float64", required=False, description="prey density x (wired from the prey model)"),
        }

    def outputs(self):
        return {
            "predator": SignalSpec.scalar(dtype="float64", description="predator density y at the window's end"),
            "prey_potential": SignalSpec.scalar(dtype="float64", description="delta x - gamma ln x for the prey density last received"),
        }

    def setup(self, config=None):
        self.population = None
        self.history = []

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port, attr in (("initial_predator", "y0"), ("gamma", "gamma"), ("delta", "delta")):
                if port in inputs:
                    setattr(self, attr, float(inputs[port].value))
            self.population = Population(self.y0, -self.gamma, self.delta)
            self.history = []
        x = float(inputs["prey"].value) if "prey" in inputs else None
        t, y = self.population.window(context.window_start - context.run_start, context.window_end - context.run_start, x)
        self.history.append([t, y])
        out = {"predator": y}
        if self.population.windows > 1:
            out["prey_potential"] = prey_potential(x, self.gamma, self.delta)
        return out

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time", "y_label": "Predator density", "series": [{"name": "predator", "points": thin(self.history)}]}}


def thin(points, limit: int = 2000):
    """At most `limit` points, evenly spaced, always keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    stride = (len(points) - 1) / (limit - 1)
    return [points[round(i * stride)] for i in range(limit)]
