"""Known answers for the coupled Lotka-Volterra scheme, run exactly as the lab runs it
(duration 50, communication step 1/128, each model seeing the other's previous publication)."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.lv_scheme import coupled_run, invariant  # noqa: E402
from src.prey import predator_potential  # noqa: E402

STEP, WINDOWS = 1 / 128, 6400  # the lab's runtime: communication_step 0.0078125, duration 50
DEFAULTS = dict(alpha=1.1, beta=0.4, gamma=0.4, delta=0.1)


def drifts(x0, y0, p):
    run = coupled_run(x0, y0, p["alpha"], p["beta"], p["gamma"], p["delta"], STEP, WINDOWS)
    v0 = invariant(x0, y0, **p)
    return run, [abs(invariant(x, y, **p) - v0) / abs(v0) for _, x, y in run]


def test_invariant_is_conserved_over_the_run():
    run, d = drifts(10.0, 10.0, DEFAULTS)
    assert d[0] == 0.0  # the handshake window publishes the initial state
    assert d[1] < 1e-3  # the first real step (0 -> 2h) holds y at y0: a one-off O(h^2) error ...
    assert max(d[2:]) < 1e-5  # ... corrected in the next window; afterwards third order
    assert d[-1] < 1e-5
    assert run[-1][0] == 50.0


def test_invariant_is_conserved_for_other_parameters():
    p = dict(alpha=0.8, beta=0.05, gamma=1.2, delta=0.04)
    _, d = drifts(20.0, 5.0, p)
    assert max(d) < 1e-3 and d[-1] < 1e-4


def test_equilibrium_stays_put():
    p = DEFAULTS
    xs, ys = p["gamma"] / p["delta"], p["alpha"] / p["beta"]
    run = coupled_run(xs, ys, p["alpha"], p["beta"], p["gamma"], p["delta"], STEP, WINDOWS)
    for _, x, y in run:
        assert math.isclose(x, xs, rel_tol=1e-9) and math.isclose(y, ys, rel_tol=1e-9)


def test_small_oscillations_have_the_linearised_period():
    p = DEFAULTS
    xs, ys = p["gamma"] / p["delta"], p["alpha"] / p["beta"]
    run = coupled_run(1.01 * xs, ys, p["alpha"], p["beta"], p["gamma"], p["delta"], STEP, WINDOWS)
    ups = []  # times x - x* crosses zero upwards, linearly interpolated
    for (t0, x0, _), (t1, x1, _) in zip(run[2:], run[3:]):
        if x0 < xs <= x1:
            ups.append(t0 + (xs - x0) / (x1 - x0) * (t1 - t0))
    periods = [b - a for a, b in zip(ups, ups[1:])]
    assert len(periods) >= 3
    expected = 2 * math.pi / math.sqrt(p["alpha"] * p["gamma"])
    for period in periods:
        assert math.isclose(period, expected, rel_tol=1e-3)


def test_invariant_is_constant_along_the_exact_flow():
    p = DEFAULTS
    for x, y in ((10.0, 10.0), (1.0, 0.3), (25.0, 2.0)):
        dx = p["alpha"] * x - p["beta"] * x * y
        dy = p["delta"] * x * y - p["gamma"] * y
        grad = (p["delta"] - p["gamma"] / x, p["beta"] - p["alpha"] / y)
        assert abs(grad[0] * dx + grad[1] * dy) < 1e-12


def test_predator_potential_is_the_predator_term_of_the_invariant():
    p = DEFAULTS
    x, y = 7.0, 3.0
    assert math.isclose(predator_potential(y, p["alpha"], p["beta"]) + p["delta"] * x - p["gamma"] * math.log(x),
                        invariant(x, y, **p), rel_tol=1e-12)


def test_prey_and_predator_share_one_scheme():
    models = Path(__file__).resolve().parents[2]
    assert (models / "prey/src/lv_scheme.py").read_bytes() == (models / "predator/src/lv_scheme.py").read_bytes()
