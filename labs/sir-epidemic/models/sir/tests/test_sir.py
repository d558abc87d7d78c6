"""Known answers for the SIR epidemic model."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.sir import dopri45, final_susceptible, simulate_sir, sir_rk4  # noqa: E402

N, I0, BETA, GAMMA = 10000.0, 10.0, 0.5, 0.2
DAYS = [float(k) for k in range(1, 161)]


def test_dopri45_solves_exponential_decay_and_growth():
    for rate in (-1.3, 0.7):
        y, _ = dopri45(lambda _t, v: [rate * v[0]], 0.0, [2.0], 5.0, rtol=1e-10, atol=1e-14)
        assert math.isclose(y[0], 2.0 * math.exp(rate * 5.0), rel_tol=1e-8)


def test_dopri45_carries_the_step_across_windows():
    y, h = [1.0, 0.0], None
    for k in range(20):  # harmonic oscillator, window by window
        y, h = dopri45(lambda _t, v: [v[1], -v[0]], k * 0.5, y, (k + 1) * 0.5, rtol=1e-11, atol=1e-14, h=h)
    assert math.isclose(y[0], math.cos(10.0), rel_tol=1e-8)
    assert math.isclose(y[1], -math.sin(10.0), rel_tol=1e-8)


def test_population_is_conserved():
    for s, i, r in simulate_sir(N, I0, BETA, GAMMA, DAYS):
        assert math.isclose(s + i + r, N, rel_tol=1e-9)
        assert min(s, i, r) >= 0.0


def test_invariant_ln_s_against_r_holds_at_every_time():
    # dS/dR = -R0 S / N, so ln(S/S0) = -R0 R / N exactly when R(0) = 0.
    s0, r0 = N - I0, BETA / GAMMA
    for s, _, r in simulate_sir(N, I0, BETA, GAMMA, DAYS):
        assert abs(math.log(s / s0) + r0 * r / N) < 1e-8


def test_final_size_relation_over_a_long_horizon():
    for n, i0, beta, gamma in ((N, I0, BETA, GAMMA), (1e6, 1.0, 0.3, 0.1), (500.0, 5.0, 0.25, 0.1)):
        s0, r0 = n - i0, beta / gamma
        s, i, _ = simulate_sir(n, i0, beta, gamma, [1000.0])[-1]
        assert i < 1e-6 * n
        assert math.isclose(math.log(s / s0), -r0 * (1.0 - s / n), rel_tol=1e-4)
        assert math.isclose(s, final_susceptible(n, s0, r0), rel_tol=1e-4)


def test_final_size_root_is_a_known_value():
    # R0 = 2.5 from a fully susceptible population: attack rate z solves z = 1 - exp(-R0 z),
    # z = 0.892644753609209..., so S_inf/N = 0.107355246390791...
    z = 0.5
    for _ in range(500):  # a contraction near the root (slope R0 e^(-R0 z) ~ 0.27)
        z = 1.0 - math.exp(-2.5 * z)
    s_inf = final_susceptible(1.0, 1.0, 2.5)
    assert math.isclose(s_inf, 1.0 - z, rel_tol=1e-9)
    assert math.isclose(s_inf, 0.10735524639079, rel_tol=1e-9)
    assert math.isclose(math.log(s_inf), -2.5 * (1.0 - s_inf), rel_tol=1e-12)


def test_matches_fine_fixed_step_rk4():
    s, i, r = simulate_sir(N, I0, BETA, GAMMA, [60.0])[-1]
    rs, ri, rr = sir_rk4(N, I0, BETA, GAMMA, 60.0, 0.005)
    assert math.isclose(s, rs, rel_tol=1e-8)
    assert math.isclose(i, ri, rel_tol=1e-8)
    assert math.isclose(r, rr, rel_tol=1e-8)


def test_peak_matches_the_closed_form_maximum():
    # At the peak S = N/R0, and S + I - (N/R0) ln S is conserved, so
    # I_max = S0 + I0 - N/R0 + (N/R0) ln(N / (R0 S0)).
    s0, r0 = N - I0, BETA / GAMMA
    i_max = s0 + I0 - N / r0 + N / r0 * math.log(N / (r0 * s0))
    grid = [k * 0.01 for k in range(1, 8001)]
    assert math.isclose(max(i for _, i, _ in simulate_sir(N, I0, BETA, GAMMA, grid)), i_max, rel_tol=1e-7)
