"""Known answers for one population's window integration."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.lv_scheme import Population, other_integral  # noqa: E402
from src.predator import prey_potential  # noqa: E402


def test_exact_growth_when_the_prey_is_constant():
    # dy/dt = (delta c - gamma) y with constant prey c: y(t) = y0 exp((delta c - gamma) t)
    gamma, delta, c, y0, h = 0.4, 0.1, 7.0, 3.0, 0.05
    predator = Population(y0, -gamma, delta)
    assert predator.window(0.0, h, None) == (0.0, y0)
    for k in range(1, 200):
        t, y = predator.window(k * h, (k + 1) * h, c)
        assert math.isclose(y, y0 * math.exp((delta * c - gamma) * t), rel_tol=1e-12)


def test_exact_growth_when_the_prey_grows_exponentially():
    # prey c e^{rt}: ln y(t) = ln y0 - gamma t + delta c (e^{rt} - 1)/r; the scheme is exact
    # for log-quadratic input once three samples are known, and the start-up error is O(h^2)
    gamma, delta, c, r, y0, h = 0.4, 0.1, 2.0, 0.3, 3.0, 1 / 128
    predator = Population(y0, -gamma, delta)
    published = None
    for k in range(0, 640):
        t, y = predator.window(k * h, (k + 1) * h, published)
        published = c * math.exp(r * (k + 1) * h) if k else c
        exact = y0 * math.exp(-gamma * t + delta * c * math.expm1(r * t) / r)
        assert math.isclose(y, exact, rel_tol=1e-5)


def test_integral_of_a_log_quadratic_is_accurate():
    w = lambda t: math.exp(0.2 + 0.5 * t - 0.3 * t * t)  # noqa: E731
    samples = [(0.0, w(0.0)), (0.1, w(0.1)), (0.2, w(0.2))]
    # extrapolated over [0.2, 0.3]: reference by a fine midpoint sum
    n = 20000
    ref = sum(w(0.2 + (i + 0.5) * 0.1 / n) for i in range(n)) * 0.1 / n
    assert math.isclose(other_integral(samples, 0.2, 0.3), ref, rel_tol=1e-8)


def test_prey_potential_is_least_at_the_equilibrium():
    gamma, delta = 0.4, 0.1
    xs = gamma / delta
    for x in (0.5, 2.0, 3.9, 4.1, 10.0):
        assert prey_potential(x, gamma, delta) > prey_potential(xs, gamma, delta)
