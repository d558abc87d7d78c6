"""Known answers for the Michaelis-Menten model."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.enzyme import lambertw, lambertw_log, rate, simulate_mm, substrate_closed_form  # noqa: E402

TIMES = [0.2 * k for k in range(1, 101)]
CASES = [(10.0, 1.0, 2.0), (100.0, 5.0, 0.5), (1.0, 0.2, 5.0), (0.05, 1.0, 0.01), (3.0, 0.01, 1.0)]


def test_lambert_w_identity():
    for x in (-1 / math.e + 1e-12, -0.36, -0.3, -0.1, -1e-6, 1e-12, 0.1, 0.5, 1.0, math.e, 10.0, 1e3, 1e8, 1e150):
        w = lambertw(x)
        assert w >= -1.0
        assert math.isclose(w * math.exp(w), x, rel_tol=1e-12)


def test_lambert_w_known_values():
    assert lambertw(0.0) == 0.0
    assert math.isclose(lambertw(1.0), 0.5671432904097838, rel_tol=1e-15)  # the omega constant
    assert math.isclose(lambertw(math.e), 1.0, rel_tol=1e-15)
    assert math.isclose(lambertw(2 * math.exp(2)), 2.0, rel_tol=1e-15)
    assert math.isclose(lambertw(-1 / math.e), -1.0, abs_tol=1e-7)
    assert math.isclose(lambertw(-math.log(2) / 2), -math.log(2), rel_tol=1e-12)  # W(-ln2/2) = -ln 2


def test_lambert_w_of_huge_arguments_in_log_space():
    for L in (-700.0, -30.0, 0.0, 50.0, 1e4, 1e9):
        w = lambertw_log(L)
        assert math.isclose(w + math.log(w), L, rel_tol=1e-14, abs_tol=1e-13)


def test_closed_form_solves_the_ode():
    s0, vmax, km, h = 10.0, 1.0, 2.0, 1e-5
    assert math.isclose(substrate_closed_form(0.0, s0, vmax, km), s0, rel_tol=1e-14)
    for t in (0.5, 5.0, 12.0):
        s = substrate_closed_form(t, s0, vmax, km)
        dsdt = (substrate_closed_form(t + h, s0, vmax, km) - substrate_closed_form(t - h, s0, vmax, km)) / (2 * h)
        assert math.isclose(dsdt, -rate(s, vmax, km), rel_tol=1e-7)


def test_numerical_integration_matches_the_lambert_w_solution():
    for s0, vmax, km in CASES:
        for t, (s, _) in zip(TIMES, simulate_mm(s0, vmax, km, TIMES)):
            assert math.isclose(s, substrate_closed_form(t, s0, vmax, km), rel_tol=1e-7)


def test_mass_is_conserved():
    for s0, vmax, km in CASES:
        for s, p in simulate_mm(s0, vmax, km, TIMES):
            assert math.isclose(s + p, s0, rel_tol=1e-9)
            assert s >= 0.0 and p >= 0.0


def test_limits_zero_and_first_order():
    # S >> Km: zero order, S = S0 - Vmax t. S << Km: first order, S = S0 exp(-Vmax t / Km).
    s, _ = simulate_mm(1e6, 2.0, 1e-3, [10.0])[-1]
    assert math.isclose(s, 1e6 - 20.0, rel_tol=1e-9)
    s, _ = simulate_mm(1e-6, 2.0, 1e3, [10.0])[-1]
    assert math.isclose(s, 1e-6 * math.exp(-2.0 * 10.0 / 1e3), rel_tol=1e-8)


def test_default_run_known_value():
    s, p = simulate_mm(10.0, 1.0, 2.0, TIMES)[-1]
    assert math.isclose(s, 0.06521773899974163, rel_tol=1e-8)
    assert math.isclose(p, 10.0 - 0.06521773899974163, rel_tol=1e-9)
