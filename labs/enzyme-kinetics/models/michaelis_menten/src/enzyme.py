"""Michaelis-Menten kinetics of one enzyme converting substrate S into product P.

    dS/dt = -v(S),  dP/dt = v(S),  v(S) = Vmax S / (Km + S)

Integrated numerically with an adaptive Dormand-Prince RK45 in plain Python, on the state
(ln S, P): in ln S the equation d(ln S)/dt = -Vmax / (Km + S) is smooth and non-stiff for
every S (it tends to the constant -Vmax/Km as S -> 0), so the relative error of S stays
at the tolerance even deep in the exponential tail, and the cost does not grow with
Vmax/Km. The same ODE has the integrated (closed) form

    S(t) = Km W((S0/Km) exp((S0 - Vmax t)/Km)),   P = S0 - S

with W the principal branch of Lambert's W function, implemented here by Halley's method.
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

RTOL = 1e-11
_INV_E = math.exp(-1.0)


# ---------------------------------------------------------------- Lambert W

def lambertw_log(log_x: float) -> float:
    """W(e^L) for any real L, without forming e^L (no overflow for huge arguments).

    Solves v + e^v = L for v = ln W (Newton/Halley on a convex increasing function),
    then W = e^v. Accurate to a few ulps relative.
    """
    L = float(log_x)
    if L < -745.0:  # W(x) = x (1 - x + ...) and x underflows
        return 0.0
    v = L - math.exp(L) if L < 1.0 else math.log(L - math.log(L))
    for _ in range(100):
        ev = math.exp(v)
        f = v + ev - L
        fp = 1.0 + ev
        dv = f / fp  # Newton
        denom = fp - 0.5 * dv * ev  # Halley (f'' = e^v) when its denominator is safe
        if denom > 0.5 * fp:
            dv = f / denom
        v -= dv
        if abs(dv) <= 4e-16 * max(1.0, abs(v)):
            break
    return math.exp(v)


def lambertw(x: float) -> float:
    """Principal branch W0(x) for x >= -1/e: the w >= -1 with w e^w = x."""
    x = float(x)
    if x > 0.0:
        return lambertw_log(math.log(x))
    if x == 0.0:
        return 0.0
    if x < -_INV_E:
        if x < -_INV_E * (1 + 1e-15):
            raise ValueError("lambertw: x < -1/e has no real value")
        return -1.0
    # Branch-point series in p = sqrt(2 (e x + 1)), then Halley on w e^w - x.
    p = math.sqrt(max(0.0, 2.0 * (math.e * x + 1.0)))
    w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p ** 3
    for _ in range(100):
        ew = math.exp(w)
        f = w * ew - x
        if f == 0.0 or w == -1.0:
            break
        dw = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= dw
        if abs(dw) <= 4e-16 * max(1.0, abs(w)):
            break
    return w


def substrate_closed_form(t: float, s0: float, vmax: float, km: float) -> float:
    """S(t) = Km W((S0/Km) exp((S0 - Vmax t)/Km)), evaluated in log space."""
    if s0 <= 0.0:
        return 0.0
    return km * lambertw_log(math.log(s0 / km) + (s0 - vmax * t) / km)


def rate(s: float, vmax: float, km: float) -> float:
    """Reaction velocity v = Vmax S / (Km + S)."""
    return vmax * s / (km + s)


# ---------------------------------------------------------------- RK45

def _err_norm(err, y, y_new, rtol, atol):
    total = 0.0
    for e, a, b, at in zip(err, y, y_new, atol):
        total += (e / (at + rtol * max(abs(a), abs(b)))) ** 2
    return math.sqrt(total / len(err))


def dopri45(f, t0, y0, t1, rtol, atol, h=None):
    """Integrate y' = f(t, y) from t0 to t1 with adaptive Dormand-Prince RK45.

    `atol` is one absolute tolerance per component. Returns (y(t1), h_next); pass h_next
    back in to continue from t1 without restarting the step-size controller.
    """
    t, y = float(t0), [float(v) for v in y0]
    if t1 <= t:
        return y, h
    k1 = f(t, y)
    if h is None or h <= 0:
        sc = [a + rtol * abs(v) for v, a in zip(y, atol)]
        d0 = math.sqrt(sum((v / s) ** 2 for v, s in zip(y, sc)) / len(y))
        d1 = math.sqrt(sum((v / s) ** 2 for v, s in zip(k1, sc)) / len(y))
        h = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h = min(h, t1 - t)
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


def mm_log_rhs(y, vmax, km):
    """Right-hand side on (u = ln S, P): du/dt = -Vmax/(Km + S), dP/dt = Vmax S/(Km + S)."""
    s = math.exp(y[0])
    return (-vmax / (km + s), vmax * s / (km + s))


def mm_advance(s, p, t0, t1, vmax, km, h=None, rtol=RTOL):
    """Advance (S, P) from t0 to t1. Returns (S, P, h_next)."""
    if s <= 0.0 or t1 <= t0:
        return max(s, 0.0), p, h
    scale = max(abs(s) + abs(p), 1e-300)
    (u, p), h = dopri45(lambda _t, y: mm_log_rhs(y, vmax, km), t0, (math.log(s), p), t1,
                        rtol=rtol, atol=(rtol, rtol * scale), h=h)
    return math.exp(u), p, h


def simulate_mm(s0, vmax, km, times, rtol=RTOL):
    """(S, P) at each time in the increasing list `times`, starting from S = S0, P = 0 at t = 0."""
    s, p, h, t, out = float(s0), 0.0, None, 0.0, []
    for tk in times:
        if tk > t:
            s, p, h = mm_advance(s, p, t, tk, vmax, km, h=h, rtol=rtol)
            t = tk
        out.append((s, p))
    return out


class MichaelisMenten(BioModule):
    execution_policy = ExecutionPolicy.EACH_WINDOW

    def __init__(self, vmax: float = 1.0, km: float = 2.0, substrate0: float = 10.0):
        self.vmax, self.km, self.s0 = float(vmax), float(km), float(substrate0)
        self.s, self.p, self.h = self.s0, 0.0, None
        self.history: dict[str, list[list[float]]] = {"substrate": [], "product": []}

    def inputs(self):
        return {
            "substrate0": SignalSpec.scalar(dtype="float64", required=False, description="initial substrate S0 (mM)"),
            "vmax": SignalSpec.scalar(dtype="float64", required=False, description="maximum velocity Vmax (mM/min)"),
            "km": SignalSpec.scalar(dtype="float64", required=False, description="Michaelis constant Km (mM)"),
        }

    def outputs(self):
        return {
            "substrate": SignalSpec.scalar(dtype="float64", emitted_unit="mM"),
            "product": SignalSpec.scalar(dtype="float64", emitted_unit="mM"),
            "rate": SignalSpec.scalar(dtype="float64", emitted_unit="mM/min"),
        }

    def setup(self, config=None):
        self.s, self.p, self.h = self.s0, 0.0, None
        self.history = {"substrate": [], "product": []}

    def execute(self, inputs, *, context: ExecutionContext):
        if context.window_start == context.run_start:
            for port, attr in (("substrate0", "s0"), ("vmax", "vmax"), ("km", "km")):
                if port in inputs:
                    setattr(self, attr, float(inputs[port].value))
            self.s, self.p, self.h = max(self.s0, 0.0), 0.0, None
        t0, t1 = context.window_start - context.run_start, context.window_end - context.run_start
        self.s, self.p, self.h = mm_advance(self.s, self.p, t0, t1, self.vmax, self.km, h=self.h)
        s, p = float(self.s), float(self.p)
        self.history["substrate"].append([context.window_end, s])
        self.history["product"].append([context.window_end, p])
        return {"substrate": s, "product": p, "rate": rate(s, self.vmax, self.km)}

    def visualize(self):
        return {"render": "timeseries", "data": {"x_label": "Time (min)", "y_label": "Concentration (mM)",
                                                 "series": [{"name": k, "points": v} for k, v in self.history.items()]}}
