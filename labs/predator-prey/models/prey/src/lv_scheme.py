"""The coupling scheme shared by the prey and predator models (this file is identical in both).

Each population u follows d(ln u)/dt = a + b*w(t), where w is the other population:
prey x: a = alpha, b = -beta; predator y: a = -gamma, b = delta. Over a communication
window with w known as a function of time, ln u is exact: u(t1) = u(t0) exp(a (t1 - t0) +
b * integral of w). The models only see each other's value from the previous window, so:

- window 0 is a handshake: each model publishes its initial value without advancing;
- window 1 advances from t = 0 across two windows (to 2h), holding w at its initial value;
- window k >= 2 first corrects the previous step, now that w at its end is known (ln w
  interpolated through the last three samples), then predicts to the window's end with ln w
  extrapolated through the same three samples.

Integrals of w use 3-point Gauss-Legendre on exp(polynomial). The scheme is third order in
the step; the first published step (t = 2h) carries a one-off O(h^2) error that the next
window corrects.
"""
import math

_GAUSS = ((-math.sqrt(0.6), 5.0 / 9.0), (0.0, 8.0 / 9.0), (math.sqrt(0.6), 5.0 / 9.0))
_TINY = 1e-300


def log_poly(points, t):
    """ln w at time t, from the Lagrange polynomial through ln w at points [(t_i, w_i)]."""
    total = 0.0
    for i, (ti, wi) in enumerate(points):
        term = math.log(max(wi, _TINY))
        for j, (tj, _) in enumerate(points):
            if j != i:
                term *= (t - tj) / (ti - tj)
        total += term
    return total


def other_integral(samples, t0, t1):
    """Integral of w over [t0, t1], with ln w the polynomial through the last (up to) 3 samples."""
    points = samples[-3:]
    half, mid = 0.5 * (t1 - t0), 0.5 * (t1 + t0)
    return sum(weight * half * math.exp(log_poly(points, mid + half * z)) for z, weight in _GAUSS)


class Population:
    """One population's state across communication windows (pure; no runtime)."""

    def __init__(self, initial: float, a: float, b: float):
        self.u, self.a, self.b = float(initial), float(a), float(b)
        self.samples: list[tuple[float, float]] = []  # (time, other population) received
        self.last_step = None  # (t0, t1, integral of the other used)
        self.windows = 0

    def window(self, start: float, end: float, other):
        """Advance over [start, end] (times from run start) given the other population's latest
        published value (None in the first window). Returns (time, value) to publish."""
        k = self.windows
        self.windows += 1
        if k == 0:
            return 0.0, self.u
        if other is None:
            raise ValueError("the other population's density is not wired to this model")
        t0 = 0.0 if k == 1 else start
        self.samples.append((t0, float(other)))
        del self.samples[:-3]
        if self.last_step is not None:
            p0, p1, used = self.last_step
            self.u *= math.exp(self.b * (other_integral(self.samples, p0, p1) - used))
        integral = other_integral(self.samples, t0, end)
        self.u *= math.exp(self.a * (end - t0) + self.b * integral)
        self.last_step = (t0, end, integral)
        return end, self.u


def invariant(x: float, y: float, alpha: float, beta: float, gamma: float, delta: float) -> float:
    """V = delta x - gamma ln x + beta y - alpha ln y, constant along every Lotka-Volterra orbit."""
    return delta * x - gamma * math.log(x) + beta * y - alpha * math.log(y)


def coupled_run(x0, y0, alpha, beta, gamma, delta, step, windows):
    """The lab's exchange, without the runtime: in each window both models read the other's
    publication from the previous window. Returns [(window_end, x_published, y_published)]."""
    prey, predator = Population(x0, alpha, -beta), Population(y0, -gamma, delta)
    x_pub = y_pub = None
    out = []
    for k in range(windows):
        start, end = k * step, (k + 1) * step
        _, x_new = prey.window(start, end, y_pub)
        _, y_new = predator.window(start, end, x_pub)
        x_pub, y_pub = x_new, y_new
        out.append((end, x_pub, y_pub))
    return out
