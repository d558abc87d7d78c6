"""Known answers for the substrate-limited growth model."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.growth import biomass_at  # noqa: E402


def test_starts_at_initial_biomass():
    assert math.isclose(biomass_at(0.0, 0.1, 10.0, 0.5, 0.5), 0.1, rel_tol=1e-12)


def test_tends_to_the_capacity_set_by_substrate():
    k = 0.1 + 0.5 * 10.0
    assert math.isclose(biomass_at(200.0, 0.1, 10.0, 0.5, 0.5), k, rel_tol=1e-9)


def test_half_capacity_at_the_inflection_time():
    x0, s0, r, y = 0.1, 10.0, 0.5, 0.5
    k = x0 + y * s0
    t_half = math.log((k - x0) / x0) / r
    assert math.isclose(biomass_at(t_half, x0, s0, r, y), k / 2, rel_tol=1e-12)


def test_solves_the_logistic_equation():
    x0, s0, r, y, h = 0.2, 8.0, 0.7, 0.4, 1e-5
    k = x0 + y * s0
    for t in (0.5, 3.0, 9.0):
        x = biomass_at(t, x0, s0, r, y)
        dxdt = (biomass_at(t + h, x0, s0, r, y) - biomass_at(t - h, x0, s0, r, y)) / (2 * h)
        assert math.isclose(dxdt, r * x * (1 - x / k), rel_tol=1e-6)
