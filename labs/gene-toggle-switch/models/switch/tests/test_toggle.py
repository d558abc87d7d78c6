"""Known answers for the stochastic toggle switch."""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.toggle import Uniforms, advance, propensities, simulate  # noqa: E402


def test_propensities():
    assert propensities(3, 2, 10.0, 2.0, 0.5) == (10.0 / 5.0, 10.0 / 10.0, 1.5, 1.0)
    # n = 0: repression off, both genes at alpha / 2 whatever the counts
    assert propensities(0, 40, 10.0, 0.0, 1.0)[:2] == (5.0, 5.0)


def test_birth_death_mean_is_k_over_gamma():
    # hill = 0: constant production k = alpha/2, degradation gamma -> Poisson(k/gamma) stationary.
    # Time average over T of a process with variance k/gamma and correlation time 1/gamma has
    # standard error sqrt(2 (k/gamma) / (gamma T)).
    for alpha, gamma, seed in ((50.0, 1.0, 12345), (20.0, 0.5, 7)):
        k, T = alpha / 2, 2000.0
        mean = k / gamma
        start = int(round(mean))
        u, v, area_u, area_v, events = advance(start, start, 0.0, T, alpha, 0.0, gamma, Uniforms(np.random.default_rng(seed)))
        se = math.sqrt(2 * mean / (gamma * T))
        assert events > 10000
        assert abs(area_u / T - mean) < 4 * se
        assert abs(area_v / T - mean) < 4 * se


def test_birth_death_is_poisson():
    samples, _, _ = simulate(25, 25, 50.0, 0.0, 1.0, 4000.0, 0.5, 99)
    us = np.array([u for _, u, _ in samples[20:]], dtype=float)
    assert abs(us.var() / us.mean() - 1.0) < 0.1  # Fano factor of a Poisson law is 1


def test_same_seed_same_trajectory_and_different_seeds_differ():
    a = simulate(10, 0, 10.0, 2.0, 1.0, 200.0, 0.5, 42)
    b = simulate(10, 0, 10.0, 2.0, 1.0, 200.0, 0.5, 42)
    c = simulate(10, 0, 10.0, 2.0, 1.0, 200.0, 0.5, 43)
    assert a == b
    assert a[0] != c[0]


def test_strong_repression_keeps_the_switch_where_it_starts():
    samples, mean_u, mean_v = simulate(30, 0, 30.0, 2.0, 1.0, 200.0, 0.5, 1)
    assert all(u > v for _, u, v in samples)
    assert mean_u > 25 and mean_v < 1
    samples, mean_u, mean_v = simulate(0, 30, 30.0, 2.0, 1.0, 200.0, 0.5, 1)
    assert all(v > u for _, u, v in samples)


def test_counts_stay_non_negative_and_samples_land_on_window_ends():
    samples, _, _ = simulate(3, 3, 5.0, 2.0, 2.0, 50.0, 0.5, 5)
    assert [t for t, _, _ in samples] == [0.5 * (i + 1) for i in range(100)]
    assert all(u >= 0 and v >= 0 for _, u, v in samples)
