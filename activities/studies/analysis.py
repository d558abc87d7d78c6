"""The numerical side of studies, run in the service's analysis environment
(activities/studies/analysis.lock), never in a lab's. `analysis.py COMMAND` answers one
request (JSON on stdin, JSON on stdout); `analysis.py serve` stays up for a worker
(activities/studies/analysis.ts), answering one request per line, `{"id", "command",
"request"}` in and `{"id", "answer"}` or `{"id", "error"}` out, with the libraries
imported once: importing them (scipy, through SALib and cmaes) costs more than any
answer.

  sample    the parameter sets of a sensitivity study (SALib's sampler of its method)
  analyze   its indices from the outputs of those runs (SALib's analyzers), per time for a series
  ask       the next batch of a calibration (CMA-ES resumed from its state; Optuna's TPE rebuilt from every trial told)
  petab_starts  a PEtab calibration's starts: uniform within the bounds on the parameter scale
  fit       a calibration's uncertainty: intervals from the local linearisation of the fit
  versions  the versions of the libraries that answer (analyze and fit say them too)

Every random stream is seeded from the request, so equal requests give equal answers.
"""
import base64
import json
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")


def problem(parameters):
    """SALib's problem: names, bounds and distributions ('unif', or 'truncnorm' within the bounds)."""
    bounds, dists = [], []
    for p in parameters:
        if p.get("distribution", "uniform") == "normal":
            bounds.append([p["low"], p["high"], p["mean"], p["sd"]])
            dists.append("truncnorm")
        else:
            bounds.append([p["low"], p["high"]])
            dists.append("unif")
    return {"num_vars": len(parameters), "names": [p["name"] for p in parameters], "bounds": bounds, "dists": dists}


def sample(req):
    """The method's sample: Saltelli's (Sobol' sequence), Morris's trajectories, eFAST's
    search curves, or a Latin hypercube (RBD-FAST, delta, PAWN)."""
    prob = problem(req["parameters"])
    method, n, seed = req["method"], req["base_sample"], req["seed"]
    if method == "sobol":
        from SALib.sample import sobol

        x = sobol.sample(prob, n, calc_second_order=False, scramble=True, seed=seed)
    elif method == "morris":
        from SALib.sample import morris

        x = morris.sample(prob, n, num_levels=req["num_levels"], seed=seed)
    elif method == "efast":
        from SALib.sample import fast_sampler

        np.random.seed(seed)
        x = fast_sampler.sample(prob, n, seed=seed, **req.get("sample_options", {}))
    elif method in ("rbd_fast", "delta", "pawn"):
        from SALib.sample import latin

        np.random.seed(seed)
        x = latin.sample(prob, n, seed=seed)
    else:
        raise ValueError(f"no sampler for method {method!r}")
    return {"points": x.tolist()}


def array(value):
    """A request's numbers: a JSON list (null is none), or packed (analysis.ts `packed`) as
    little-endian float64 in base64 with its shape (NaN is none)."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["float64"]), dtype="<f8").reshape(value["shape"]).copy()
    return np.array(value, dtype=float)


def finite(values):
    return [None if v is None or not np.isfinite(v) else float(v) for v in values]


def indices(req, prob, x, y):
    """SALib's indices of one output over the whole sample, the fields the caller names.
    numpy's global stream is seeded first: some analyzers draw from it and seed it only
    for a seed other than 0."""
    method, seed, resamples = req["method"], req["seed"], req["num_resamples"]
    options = req.get("analyze_options", {})
    np.random.seed(seed)
    if method == "sobol":
        from SALib.analyze import sobol

        si = sobol.analyze(prob, y, calc_second_order=False, num_resamples=resamples, conf_level=0.95, seed=seed)
    elif method == "morris":
        from SALib.analyze import morris

        si = morris.analyze(prob, x, y, num_resamples=resamples, conf_level=0.95, num_levels=req["num_levels"], seed=seed)
    elif method == "efast":
        from SALib.analyze import fast

        si = fast.analyze(prob, y, num_resamples=resamples, conf_level=0.95, seed=seed, **options)
    elif method == "rbd_fast":
        from SALib.analyze import rbd_fast

        si = rbd_fast.analyze(prob, x, y, num_resamples=resamples, conf_level=0.95, seed=seed, **options)
    elif method == "delta":
        from SALib.analyze import delta

        si = delta.analyze(prob, x, y, num_resamples=resamples, conf_level=0.95, seed=seed)
    elif method == "pawn":
        from SALib.analyze import pawn

        si = pawn.analyze(prob, x, y, seed=seed, **options)
    else:
        raise ValueError(f"no analyzer for method {method!r}")
    return {k: finite(np.asarray(si[k], dtype=float)) for k in req["fields"]}


def constant(y):
    """Whether an output is the same in every run (to within 1e-9 of its size): no
    parameter moves it, and a variance-based index there would be 0/0."""
    scale = float(np.max(np.abs(y)))
    return float(np.ptp(y)) <= 1e-9 * scale if scale > 0 else True


def analyze(req):
    """
    Indices of each output: `outputs` holds one number a run, `series` one value a run at
    each of its `times` (a run's row, null where its series has none), as lists or packed
    (`array`), with the sample's `points` the same way. A series output's
    indices are SALib's at each time over the same runs, or undefined there with a reason:
    the same value in every run, a run without one, or SALib failing at that time alone.
    """
    prob = problem(req["parameters"])
    x = array(req["points"])
    out = {}
    for name, ys in req["outputs"].items():
        out[name] = indices(req, prob, x, array(ys))
    over_time = {}
    for name, rows in req.get("series", {}).items():
        times = req["times"][name]
        y = array(rows).reshape(len(x), len(times))
        fields = {f: [[None] * len(times) for _ in req["parameters"]] for f in req["fields"]}
        undefined = []
        for j, t in enumerate(times):
            column = y[:, j]
            missing = int(np.sum(~np.isfinite(column)))
            if missing:
                undefined.append({"time": t, "reason": "missing", "runs": missing})
                continue
            if constant(column):
                undefined.append({"time": t, "reason": "constant", "runs": 0})
                continue
            try:
                at = indices(req, prob, x, column)
            except Exception as exc:  # this time's failure (a singular density, say), not the study's
                undefined.append({"time": t, "reason": "failed", "runs": 0, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            for f, values in at.items():
                for i, v in enumerate(values):
                    fields[f][i][j] = v
        over_time[name] = {"fields": fields, "undefined": undefined}
    return {"indices": out, "over_time": over_time, **versions(req)}


def ask(req):
    """The next batch of a calibration: CMA-ES or TPE, each resumed from what Postgres holds."""
    return ask_cmaes(req) if req["optimizer"] == "cmaes" else ask_tpe(req)


def ask_cmaes(req):
    """
    CMA-ES (the cmaes library, the engine behind Optuna's CMA-ES sampler) on the unit cube
    of the bounds, one generation per batch. Its whole state (mean, covariance, step size,
    random stream, reseeded per batch) is pickled into the first set of each batch, so the next batch unpickles
    the last one, tells it that batch's losses and asks: the work per batch does not grow
    with the trials before it. A failed run counts as the batch's worst loss.
    """
    import pickle

    from cmaes import CMA

    lows = np.array([p["low"] for p in req["parameters"]], dtype=float)
    spans = np.array([p["high"] - p["low"] for p in req["parameters"]], dtype=float)
    d = len(lows)
    last = req.get("last_batch")
    if last is None:
        opt = CMA(mean=np.full(d, 0.5), sigma=1 / 6, bounds=np.tile([0.0, 1.0], (d, 1)), seed=req["seed"], population_size=req["popsize"])
    else:
        opt = pickle.loads(bytes.fromhex(last["state"]))
        # cmaes leaves its random stream out of the pickle and seeds a new one from the OS
        # on load: reseeded here from the study's seed and the batch, an ask depends only on
        # the seed and what was told, as the study's replay and retries need.
        opt.reseed_rng(req["seed"] + req["batch"])
        values = [v for v in last["values"] if v is not None]
        worst = max(values) if values else 1e300
        told = [((np.array([x[p["name"]] for p in req["parameters"]]) - lows) / spans, worst if v is None else v) for x, v in zip(last["params"], last["values"])]
        if len(told) == opt.population_size:
            opt.tell(told)
    xs = [opt.ask() for _ in range(req["batch_size"])]
    state = pickle.dumps(opt).hex()
    return {"asked": [
        {"params": {p["name"]: float(lows[i] + x[i] * spans[i]) for i, p in enumerate(req["parameters"])}, "attrs": {"cma": state} if k == 0 else {}}
        for k, x in enumerate(xs)
    ]}


def ask_tpe(req):
    """Optuna's TPE sampler by ask-and-tell, its study rebuilt from every trial told (its only state)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dists = {p["name"]: optuna.distributions.FloatDistribution(p["low"], p["high"]) for p in req["parameters"]}
    # A fresh sampler per batch, seeded by the batch: the asked sets depend only on the
    # trials told so far and the seed, wherever and however often this is called.
    n = req["batch_size"]
    sampler = optuna.samplers.TPESampler(seed=req["seed"] + req["batch"], constant_liar=True, n_startup_trials=max(n, 2 * len(dists)))
    study = optuna.create_study(sampler=sampler, direction="minimize")
    for t in req["trials"]:
        ok = t["value"] is not None
        study.add_trial(optuna.trial.create_trial(
            params=t["params"], distributions=dists,
            state=optuna.trial.TrialState.COMPLETE if ok else optuna.trial.TrialState.FAIL, value=t["value"] if ok else None,
        ))
    return {"asked": [{"params": study.ask(dists).params, "attrs": {}} for _ in range(n)]}


def fit(req):
    """
    Intervals for the best parameters from the local linearisation of the model around
    them (Gauss-Newton): the Jacobian of the fitted values is the least-squares slope of
    the evaluated sets nearest the best, the residual variance is the fit's own (or the
    stated noise), and each interval is the projection of the joint confidence region
    (so all hold together at the stated level). Descriptive: it assumes the model is
    locally linear and the noise Gaussian and independent.
    """
    from scipy import stats

    names = [p["name"] for p in req["parameters"]]
    span = np.array([p["high"] - p["low"] for p in req["parameters"]], dtype=float)
    trials = [t for t in req["trials"] if t["fitted"] is not None]
    x = np.array([[t["params"][n] for n in names] for t in trials], dtype=float)
    f = np.array([t["fitted"] for t in trials], dtype=float)
    y = np.asarray(req["observed"], dtype=float)
    n, p = len(y), len(names)
    best = int(np.argmin([t["loss"] for t in trials]))
    nearest = np.argsort(np.linalg.norm((x - x[best]) / span, axis=1))[: max(3 * p, 8)]
    none = {"method": "linearised_joint_region", "level": 0.95, "intervals": None, "descriptive": True, **versions(req)}
    if n <= p or len(nearest) <= p:
        return {**none, "note": "Too few observations or evaluated sets to state an interval."}
    design = np.column_stack([np.ones(len(nearest)), x[nearest] - x[best]])
    coef, _, rank, _ = np.linalg.lstsq(design, f[nearest], rcond=None)
    if rank < p + 1:
        return {**none, "note": "The evaluated sets near the best do not span every parameter."}
    jac = coef[1:].T
    resid = y - f[best]
    noise = req.get("noise_sd")
    variance = noise**2 if noise else float(resid @ resid) / (n - p)
    jtj = jac.T @ jac
    if np.linalg.cond(jtj) > 1e12:
        return {**none, "note": "The parameters are not identifiable from these observations near the best (a flat direction)."}
    centre = x[best] + np.linalg.solve(jtj, jac.T @ resid)
    sd = np.sqrt(np.diag(variance * np.linalg.inv(jtj)))
    half = sd * np.sqrt(p * (stats.chi2.ppf(0.95, p) / p if noise else stats.f.ppf(0.95, p, n - p)))
    return {
        **none,
        "intervals": {name: {"estimate": float(centre[i]), "low": float(centre[i] - half[i]), "high": float(centre[i] + half[i]), "sd": float(sd[i])} for i, name in enumerate(names)},
        "residual_sd": float(np.sqrt(variance)),
        "note": "Simultaneous 95% intervals around each parameter's estimate: the projections of the joint confidence region of the Gauss-Newton linearisation at the best evaluated set (its Jacobian fitted to the nearest evaluated sets). The estimate is that linearisation's least-squares point, one Gauss-Newton step from the best evaluated set; no run executed it, and the best evaluated set may lie outside the intervals. They assume a locally linear model and independent Gaussian noise.",
    }


def petab_starts(req):
    """numpy's generator of the seed, uniform within [lb, ub] on the parameter scale: the
    draw pyPESTO's users make (and test/differential/petab_pypesto.py makes)."""
    x = np.random.default_rng(req["seed"]).uniform(req["lb"], req["ub"], size=(req["starts"], len(req["lb"])))
    return {"starts": x.tolist()}


def versions(_req):
    from importlib.metadata import version

    return {"versions": {d: version(d) for d in ("SALib", "optuna", "cmaes", "numpy", "scipy")}}


COMMANDS = {"sample": sample, "analyze": analyze, "ask": ask, "fit": fit, "petab_starts": petab_starts, "versions": versions}

def serve():
    import traceback

    import cmaes  # noqa: F401  (imported once, here, for every request after)
    import optuna  # noqa: F401
    import SALib.analyze.delta  # noqa: F401
    import SALib.analyze.fast  # noqa: F401
    import SALib.analyze.morris  # noqa: F401
    import SALib.analyze.pawn  # noqa: F401
    import SALib.analyze.rbd_fast  # noqa: F401
    import SALib.analyze.sobol  # noqa: F401
    import SALib.sample.fast_sampler  # noqa: F401
    import SALib.sample.latin  # noqa: F401
    import SALib.sample.morris  # noqa: F401
    import SALib.sample.sobol  # noqa: F401
    import scipy.stats  # noqa: F401

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        try:
            out = {"id": message["id"], "answer": COMMANDS[message["command"]](message["request"])}
        except Exception:  # the request's own failure, reported to its caller; the server goes on
            out = {"id": message["id"], "error": traceback.format_exc(limit=5)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    else:
        json.dump(COMMANDS[sys.argv[1]](json.load(sys.stdin)), sys.stdout)
