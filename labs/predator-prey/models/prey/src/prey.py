"""Prey population of a Lotka-Volterra pair: dx/dt = alpha x - beta x y.

The predator density y arrives on the wired `predator` input, one communication window after
the predator model published it; src/lv_scheme.py explains how the window is integrated.
"""
import math

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec

from src.lv_scheme import Population


def predator_potential(y: float, alpha: float, beta: float) -> float:
    """The predator's term of the Lotka-Volterra invariant, beta y - alpha ln y."""
    return beta * y - alpha * math.log(y)


class Prey(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, alpha: float = 1.1, beta: float = 0.4, initial_prey: float = 10.0):
        self.alpha, self.beta, self.x0 = float(alpha), float(beta), float(initial_prey)
        self.population = None
        self.history: list[list[float]] = []

    def inputs(self):
        return {
            "initial_prey": SignalSpec.scalar(dtype="float64", required=False, description="initial prey density"),
            "alpha": SignalSpec.scalar(dtype="float64", required=False, description="prey birth rate alpha (1/time)"),
            "beta": SignalSpec.scalar(dtype="float64", required=False, description="predation rate beta (1/(predator time))"),
            "predator": SignalSpec.scalar(dtype="float64", required=False, description="predator density y (wired from the predator model)"),
        }

    def outputs(self):
        return {
            "prey": SignalSpec.scalar(dtype="float64", description="prey density x at the window's end"),
            "predator_potential": SignalSpec.scalar(dtype="float64", description="beta y - alpha ln y for the predator density last received"),
        }

    def setup(self, config=None):
        self.population = None
        self.history = []

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port, attr in (("initial_prey", "x0"), ("alpha", "alpha"), ("beta", "beta")):
                if port in inputs:
                    setattr(self, attr, float(inputs[port].value))
            self.population = Population(self.x0, self.alpha, -self.beta)
            self.history = []
        y = float(inputs["predator"].value) if "predator" in inputs else None
        t, x = self.population.window(context.window_start - context.run_start, context.window_end - context.run_start, y)
        self.history.append([t, x])
        out = {"prey": x}
        if self.population.windows > 1:
            out["predator_potential"] = predator_potential(y, self.alpha, self.beta)
        return out

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time", "y_label": "Prey density", "series": [{"name": "prey", "points": thin(self.history)}]}}


def thin(points, limit: int = 2000):
    """At most `limit` points, evenly spaced, always keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    stride = (len(points) - 1) / (limit - 1)
    return [points[round(i * stride)] for i in range(limit)]
