"""Stochastic genetic toggle switch (two mutually repressing genes), by Gillespie's SSA.

Protein counts U and V; four reactions with propensities
  U -> U+1 : alpha / (1 + V^n)      V -> V+1 : alpha / (1 + U^n)
  U -> U-1 : gamma U                V -> V-1 : gamma V
With n = 0 there is no repression: each protein is made at the constant rate k = alpha/2 and
decays at gamma, a birth-death process whose stationary law is Poisson with mean k/gamma.

Random numbers come from numpy.random.default_rng(seed) with the run's seed (SILICO_SEED),
so a run is reproducible for a given seed.
"""
import math
import os

import numpy as np

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec


def propensities(u: int, v: int, alpha: float, hill: float, gamma: float):
    """(make U, make V, degrade U, degrade V) rates in state (u, v)."""
    return alpha / (1.0 + float(v) ** hill), alpha / (1.0 + float(u) ** hill), gamma * u, gamma * v


class Uniforms:
    """Uniform(0, 1] numbers from a numpy Generator, drawn in blocks (fast and reproducible)."""

    def __init__(self, rng: np.random.Generator, block: int = 4096):
        self.rng, self.block = rng, block
        self.buffer, self.i = [], 0

    def next(self) -> float:
        if self.i >= len(self.buffer):
            self.buffer, self.i = (1.0 - self.rng.random(self.block)).tolist(), 0
        self.i += 1
        return self.buffer[self.i - 1]


def advance(u: int, v: int, t: float, t_end: float, alpha: float, hill: float, gamma: float, uniforms: Uniforms):
    """Run the SSA from (u, v) at time t to t_end. Returns (u, v, area_u, area_v, events), where
    area_* is the integral of the count over [t, t_end] (for time averages)."""
    area_u = area_v = 0.0
    events = 0
    while True:
        a1, a2, a3, a4 = propensities(u, v, alpha, hill, gamma)
        total = a1 + a2 + a3 + a4
        dt = -math.log(uniforms.next()) / total if total > 0 else math.inf
        if t + dt >= t_end:
            area_u += (t_end - t) * u
            area_v += (t_end - t) * v
            return u, v, area_u, area_v, events
        area_u += dt * u
        area_v += dt * v
        t += dt
        events += 1
        pick = uniforms.next() * total
        if pick < a1:
            u += 1
        elif pick < a1 + a2:
            v += 1
        elif pick < a1 + a2 + a3:
            u -= 1
        else:
            v -= 1


def simulate(u0: int, v0: int, alpha: float, hill: float, gamma: float, duration: float, step: float, seed: int):
    """The lab's run without the runtime: windows of `step` up to `duration`, state sampled at
    each window's end. Returns (samples [(t, u, v)], time-averaged u, time-averaged v)."""
    uniforms = Uniforms(np.random.default_rng(seed))
    u, v, t = int(u0), int(v0), 0.0
    area_u = area_v = 0.0
    samples = []
    while t < duration - 1e-12:
        end = min(t + step, duration)
        u, v, au, av, _ = advance(u, v, t, end, alpha, hill, gamma, uniforms)
        area_u, area_v, t = area_u + au, area_v + av, end
        samples.append((t, u, v))
    return samples, area_u / t, area_v / t


def run_seed() -> int:
    return int(os.environ.get("SILICO_SEED", "0"))


class ToggleSwitch(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, alpha: float = 10.0, hill: float = 2.0, gamma: float = 1.0, initial_u: int = 10, initial_v: int = 0):
        self.alpha, self.hill, self.gamma = float(alpha), float(hill), float(gamma)
        self.u0, self.v0 = int(initial_u), int(initial_v)
        self.u, self.v = self.u0, self.v0
        self.area_u = self.area_v = 0.0
        self.history: list[list[float]] = []
        self.uniforms = Uniforms(np.random.default_rng(run_seed()))

    def inputs(self):
        return {
            "alpha": SignalSpec.scalar(dtype="float64", required=False, description="maximal production rate (molecules/time)"),
            "hill": SignalSpec.scalar(dtype="float64", required=False, description="Hill coefficient n of the repression"),
            "gamma": SignalSpec.scalar(dtype="float64", required=False, description="degradation rate (1/time)"),
            "initial_u": SignalSpec.scalar(dtype="float64", required=False, description="initial count of U"),
            "initial_v": SignalSpec.scalar(dtype="float64", required=False, description="initial count of V"),
        }

    def outputs(self):
        return {
            "u": SignalSpec.scalar(dtype="float64", emitted_unit="molecules"),
            "v": SignalSpec.scalar(dtype="float64", emitted_unit="molecules"),
            "mean_u": SignalSpec.scalar(dtype="float64", emitted_unit="molecules"),
            "mean_v": SignalSpec.scalar(dtype="float64", emitted_unit="molecules"),
        }

    def setup(self, config=None):
        self.uniforms = Uniforms(np.random.default_rng(run_seed()))
        self.u, self.v = self.u0, self.v0
        self.area_u = self.area_v = 0.0
        self.history = []

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port in ("alpha", "hill", "gamma"):
                if port in inputs:
                    setattr(self, port, float(inputs[port].value))
            for port, attr in (("initial_u", "u0"), ("initial_v", "v0")):
                if port in inputs:
                    setattr(self, attr, int(round(float(inputs[port].value))))
            self.u, self.v = self.u0, self.v0
            self.area_u = self.area_v = 0.0
            self.history = []
        self.u, self.v, au, av, _ = advance(self.u, self.v, context.window_start, context.window_end,
                                            self.alpha, self.hill, self.gamma, self.uniforms)
        self.area_u += au
        self.area_v += av
        elapsed = context.window_end - context.run_start
        self.history.append([context.window_end, self.u, self.v])
        return {"u": float(self.u), "v": float(self.v), "mean_u": self.area_u / elapsed, "mean_v": self.area_v / elapsed}

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time", "y_label": "Protein count", "series": [
            {"name": "U", "points": [[t, u] for t, u, _ in self.history]},
            {"name": "V", "points": [[t, v] for t, _, v in self.history]},
        ]}}
