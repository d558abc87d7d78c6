"""Batch growth on one limiting substrate, in closed form.

With a constant yield Y, biomass X and substrate S satisfy X + Y*S = X0 + Y*S0 = K, and
dX/dt = r X (1 - X/K) gives X(t) = K / (1 + (K - X0)/X0 * exp(-r t)); S = (K - X)/Y.
"""
import math

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec


def biomass_at(t: float, x0: float, s0: float, rate: float, yield_coefficient: float) -> float:
    k = x0 + yield_coefficient * s0
    return k / (1.0 + (k - x0) / x0 * math.exp(-rate * t))


class SubstrateLimitedGrowth(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, rate: float = 0.5, yield_coefficient: float = 0.5, biomass0: float = 0.1, substrate0: float = 10.0):
        self.rate, self.yield_coefficient = float(rate), float(yield_coefficient)
        self.x0, self.s0 = float(biomass0), float(substrate0)
        self.history: list[list[float]] = []

    def inputs(self):
        return {
            "biomass0": SignalSpec.scalar(dtype="float64", required=False, description="initial biomass (g/L)"),
            "substrate0": SignalSpec.scalar(dtype="float64", required=False, description="initial substrate (g/L)"),
            "rate": SignalSpec.scalar(dtype="float64", required=False, description="growth rate (1/h)"),
        }

    def outputs(self):
        return {
            "biomass": SignalSpec.scalar(dtype="float64", emitted_unit="g/L"),
            "substrate": SignalSpec.scalar(dtype="float64", emitted_unit="g/L"),
        }

    def setup(self, config=None):
        self.history = []

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port, attr in (("biomass0", "x0"), ("substrate0", "s0"), ("rate", "rate")):
                if port in inputs:
                    setattr(self, attr, float(inputs[port].value))
        t = context.window_end - context.run_start
        x = biomass_at(t, self.x0, self.s0, self.rate, self.yield_coefficient)
        s = max(0.0, (self.x0 + self.yield_coefficient * self.s0 - x) / self.yield_coefficient)
        self.history.append([context.window_end, x])
        return {"biomass": x, "substrate": s}

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time (h)", "y_label": "Biomass (g/L)", "series": [{"name": "biomass", "points": self.history}]}}
