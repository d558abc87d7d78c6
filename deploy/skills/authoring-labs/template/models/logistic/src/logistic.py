"""Logistic growth in closed form: dN/dt = r N (1 - N/K), so
N(t) = K / (1 + (K - N0)/N0 * exp(-r t))."""
import math

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec


def population_at(t: float, n0: float, rate: float, capacity: float) -> float:
    return capacity / (1.0 + (capacity - n0) / n0 * math.exp(-rate * t))


class LogisticGrowth(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, carrying_capacity: float = 100.0):  # lab.yaml models[].parameters arrive here
        self.capacity = float(carrying_capacity)

    def inputs(self):  # every port an io.inputs maps_to names
        return {
            "initial_population": SignalSpec.scalar(dtype="float64", required=False, description="N0"),
            "growth_rate": SignalSpec.scalar(dtype="float64", required=False, description="r (1/h)"),
        }

    def outputs(self):
        return {"population": SignalSpec.scalar(dtype="float64", emitted_unit="individuals")}

    def execute(self, inputs, *, context: ExecutionContext):
        # A run's inputs are in `inputs` at every window; one the run leaves out is absent.
        n0 = float(inputs["initial_population"].value) if "initial_population" in inputs else 10.0
        rate = float(inputs["growth_rate"].value) if "growth_rate" in inputs else 0.5
        t = context.window_end - context.run_start
        return {"population": population_at(t, n0, rate, self.capacity)}
