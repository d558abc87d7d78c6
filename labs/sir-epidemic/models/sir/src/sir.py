"""SIR epidemic, integrated with an adaptive Dormand-Prince RK45 in plain Python.

    dS/dt = -beta S I / N
    dI/dt =  beta S I / N - gamma I
    dR/dt =  gamma I

S + I + R = N is a linear invariant (RK methods keep it to rounding error). With
R(0) = 0, ln(S/S0) = -R0 R / N holds at every t (R0 = beta/gamma), so at the end of the
epidemic ln(S_inf/S0) = -R0 (1 - S_inf/N): the final-size relation.
"""
import math

from biosimulant import BioModule, ExecutionContext, ExecutionPolicy, SignalSpec

# Dormand-Prince 5(4) tableau.
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)
_E = tuple(b5 - b4 for b5, b4 in zip(_B5, _B4))

RTOL = 1e-10
ATOL_PER_N = 1e-12


def sir_rhs(y, beta, gamma, n):
    s, i, _ = y
    infection = beta * s * i / n
    recovery = gamma * i
    return (-infection, infection - recovery, recovery)


def _err_norm(err, y, y_new, rtol, atol):
    total = 0.0
    for e, a, b in zip(err, y, y_new):
        sc = atol + rtol * max(abs(a), abs(b))
        total += (e / sc) ** 2
    return math.sqrt(total / len(err))


def _initial_step(f, t0, y0, f0, span, rtol, atol):
    """Hairer, Norsett & Wanner's starting step for an order-5 method."""
    sc = [atol + rtol * abs(v) for v in y0]
    d0 = math.sqrt(sum((v / s) ** 2 for v, s in zip(y0, sc)) / len(y0))
    d1 = math.sqrt(sum((v / s) ** 2 for v, s in zip(f0, sc)) / len(y0))
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, span)
    y1 = [v + h0 * d for v, d in zip(y0, f0)]
    f1 = f(t0 + h0, y1)
    d2 = math.sqrt(sum(((a - b) / s) ** 2 for a, b, s in zip(f1, f0, sc)) / len(y0)) / h0
    if max(d1, d2) <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1 / 5)
    return min(100 * h0, h1, span)


def dopri45(f, t0, y0, t1, rtol=RTOL, atol=1e-12, h=None):
    """Integrate y' = f(t, y) from t0 to t1 (t1 > t0) with adaptive Dormand-Prince RK45.

    Returns (y(t1), h_next); pass h_next back in to continue from t1 without restarting
    the step-size controller. Error per step: RMS of err / (atol + rtol * |y|) <= 1.
    """
    t, y = float(t0), [float(v) for v in y0]
    if t1 <= t:
        return y, h
    k1 = f(t, y)
    if h is None or h <= 0:
        h = _initial_step(f, t, y, k1, t1 - t, rtol, atol)
    while t < t1:
        last = t + h >= t1 or (t1 - (t + h)) <= 1e-12 * max(1.0, abs(t1))
        step = t1 - t if last else h
        ks = [k1]
        for stage in range(1, 7):
            yi = [y[j] + step * sum(a * ks[m][j] for m, a in enumerate(_A[stage])) for j in range(len(y))]
            ks.append(f(t + _C[stage] * step, yi))
        y_new = [y[j] + step * sum(b * ks[m][j] for m, b in enumerate(_B5) if b) for j in range(len(y))]
        err = [step * sum(e * ks[m][j] for m, e in enumerate(_E)) for j in range(len(y))]
        norm = _err_norm(err, y, y_new, rtol, atol)
        if norm <= 1.0:
            t = t1 if last else t + step
            y = y_new
            k1 = ks[6]  # FSAL: the last stage is f(t + step, y_new)
            factor = 5.0 if norm == 0.0 else min(5.0, max(0.2, 0.9 * norm ** -0.2))
            # a step cut short at t1 keeps the controller's longer proposal for the next call
            h = max(h, step * factor) if last else step * factor
        else:
            h = step * max(0.2, 0.9 * norm ** -0.2)
            if h < 1e-14 * max(1.0, abs(t)):
                raise ArithmeticError("dopri45: step size underflow")
    return y, h


def sir_initial_state(n, i0):
    i0 = min(max(float(i0), 0.0), float(n))
    return (float(n) - i0, i0, 0.0)


def sir_advance(y, t0, t1, beta, gamma, n, h=None, rtol=RTOL):
    """Advance the SIR state y = (S, I, R) from t0 to t1. Returns ((S, I, R), h_next)."""
    return dopri45(lambda _t, v: sir_rhs(v, beta, gamma, n), t0, y, t1, rtol=rtol, atol=ATOL_PER_N * n, h=h)


def simulate_sir(n, i0, beta, gamma, times, rtol=RTOL):
    """States (S, I, R) at each time in the increasing list `times` (starting from t = 0)."""
    y, h, t, out = sir_initial_state(n, i0), None, 0.0, []
    for tk in times:
        if tk > t:
            y, h = sir_advance(y, t, tk, beta, gamma, n, h=h, rtol=rtol)
            t = tk
        out.append(tuple(y))
    return out


def sir_rk4(n, i0, beta, gamma, t_end, dt):
    """Classical fixed-step RK4, used as an independent reference."""
    y = list(sir_initial_state(n, i0))
    steps = int(round(t_end / dt))
    for _ in range(steps):
        k1 = sir_rhs(y, beta, gamma, n)
        k2 = sir_rhs([a + dt / 2 * b for a, b in zip(y, k1)], beta, gamma, n)
        k3 = sir_rhs([a + dt / 2 * b for a, b in zip(y, k2)], beta, gamma, n)
        k4 = sir_rhs([a + dt * b for a, b in zip(y, k3)], beta, gamma, n)
        y = [a + dt / 6 * (p + 2 * q + 2 * r + s) for a, p, q, r, s in zip(y, k1, k2, k3, k4)]
    return tuple(y)


def final_susceptible(n, s0, r0):
    """S_inf solving ln(S_inf/S0) = -R0 (1 - S_inf/N), the root in (0, min(S0, N/R0)) (bisection)."""
    if s0 <= 0:
        return 0.0

    def g(s):
        return math.log(s / s0) + r0 * (1.0 - s / n)

    hi = min(s0, n / r0) if r0 > 0 else s0  # g(hi) >= 0 and g increases on (0, N/R0)
    lo = 0.5 * hi
    while g(lo) > 0:
        lo *= 0.5
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if g(mid) > 0:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    return 0.5 * (lo + hi)


class SIREpidemic(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, beta: float = 0.5, gamma: float = 0.2, population: float = 10000.0, infected0: float = 10.0):
        self.beta, self.gamma = float(beta), float(gamma)
        self.population, self.infected0 = float(population), float(infected0)
        self.state = sir_initial_state(self.population, self.infected0)
        self.h = None
        self.history: dict[str, list[list[float]]] = {"susceptible": [], "infected": [], "recovered": []}

    def inputs(self):
        return {
            "population": SignalSpec.scalar(dtype="float64", required=False, description="total population N"),
            "infected0": SignalSpec.scalar(dtype="float64", required=False, description="initially infected I(0)"),
            "beta": SignalSpec.scalar(dtype="float64", required=False, description="contact rate beta (1/day)"),
            "gamma": SignalSpec.scalar(dtype="float64", required=False, description="recovery rate gamma (1/day)"),
        }

    def outputs(self):
        return {
            "susceptible": SignalSpec.scalar(dtype="float64", emitted_unit="people"),
            "infected": SignalSpec.scalar(dtype="float64", emitted_unit="people"),
            "recovered": SignalSpec.scalar(dtype="float64", emitted_unit="people"),
        }

    def setup(self, config=None):
        self.state = sir_initial_state(self.population, self.infected0)
        self.h = None
        self.history = {"susceptible": [], "infected": [], "recovered": []}

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port, attr in (("population", "population"), ("infected0", "infected0"), ("beta", "beta"), ("gamma", "gamma")):
                if port in inputs:
                    setattr(self, attr, float(inputs[port].value))
            self.state = sir_initial_state(self.population, self.infected0)
            self.h = None
        t0, t1 = context.window_start - context.run_start, context.window_end - context.run_start
        self.state, self.h = sir_advance(self.state, t0, t1, self.beta, self.gamma, self.population, h=self.h)
        s, i, r = (float(v) for v in self.state)
        for name, v in (("susceptible", s), ("infected", i), ("recovered", r)):
            self.history[name].append([context.window_end, v])
        return {"susceptible": s, "infected": i, "recovered": r}

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time (days)", "y_label": "People",
                                                 "series": [{"name": k, "points": v} for k, v in self.history.items()]}}
