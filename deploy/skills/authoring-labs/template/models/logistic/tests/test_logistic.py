"""Known answers for the logistic model."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.logistic import population_at  # noqa: E402


def test_starts_at_n0_and_tends_to_k():
    assert math.isclose(population_at(0.0, 10.0, 0.5, 1000.0), 10.0, rel_tol=1e-12)
    assert math.isclose(population_at(200.0, 10.0, 0.5, 1000.0), 1000.0, rel_tol=1e-9)


def test_solves_the_logistic_equation():
    n0, r, k, h = 10.0, 0.8, 500.0, 1e-5
    for t in (1.0, 5.0, 9.0):
        n = population_at(t, n0, r, k)
        dndt = (population_at(t + h, n0, r, k) - population_at(t - h, n0, r, k)) / (2 * h)
        assert math.isclose(dndt, r * n * (1 - n / k), rel_tol=1e-6)
