"""Known answers for the plot model's helpers."""
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from src.plot import relative_drift, thin  # noqa: E402


def test_relative_drift():
    assert math.isclose(relative_drift([2.0, 2.02, 1.99], 2.0), 0.01, rel_tol=1e-12)
    assert relative_drift([], 2.0) == 0.0
    assert relative_drift([0.5], 0.0) == 0.5


def test_thin_keeps_ends_and_bounds_the_count():
    pts = [[i, i] for i in range(10001)]
    out = thin(pts, 2000)
    assert len(out) == 2000 and out[0] == pts[0] and out[-1] == pts[-1]
    assert thin(pts[:5]) == pts[:5]
