"""Silico's PEtab engine: one PEtab problem, loaded once, evaluated, optimised or
profiled in this process, inside the sandbox, in the environment of the problem's lab
(activities/petab/toolkit.lock). The problem's model is simulated by libroadrunner through
pyPESTO's PEtab importer for it; the likelihood is PEtab's, as the petab library and
pyPESTO compute it, never ours. Reports to the worker as JSON lines on file descriptor 3:

  {"type": "hello"}                                        (first: the sandbox is up)
  {"type": "versions", "versions": {"petab": "0.10.0", ...}}
  {"type": "heartbeat"}                                    (at least every 2 s)
  {"type": "problem", ...}                                 (what is estimated, on which scale and bounds)
  {"type": "findings", "findings": [...]}                  (lint: the petab library's own)
  {"type": "evaluation", "index": 0, "fval": 138.2, ...}   (evaluate: one per parameter set)
  {"type": "evaluations", "start": 3, "rows": [[n, fval, sha256, x0, x1, ...], ...]}  (optimize: every evaluation, in chunks)
  {"type": "start_best", "start": 3, "n_fval": 120, "fval": 140.1, "x": [...]}  (optimize: the start's best so far)
  {"type": "start_end", "start": 3, "fval": 138.2, "x": [...], "n_fval": 900, ...}
  {"type": "profile", "parameter": "k1", "points": [[x, fval], ...], ...}
  {"type": "hessian", "x": [...], "eigenvalues": [...], "se": [...], "low": [...], "high": [...]}
  {"type": "fit", "rows": [[observable, condition, preequilibration, time, measurement, simulation, sigma], ...], ...}
  {"type": "result", "status": "completed" | "stopped", "cpu_seconds": 1.2}
  {"type": "error", "code": "...", "message": "..."}       (then a non-zero exit)

Usage: python engine.py PROBLEM_YAML < {"command": "describe" | "lint" | "inspect" | "evaluate" | "optimize" | "profile" | "hessian" | "fit", ...}
   or: python engine.py --serve SCRATCH SOCKET   (a warm instance: forkserve.py; each request
       names its problem's staged YAML as `yaml`)
`inspect` is an import's one look: the lint's findings, and when it finds no error, the
problem and its evaluation at the nominal parameters (with the petab library's likelihood).
Parameter vectors are on the parameter scale (PEtab's parameterScale), in the order of the
`problem` message's `parameters`: the estimated ones. SIGTERM stops between starts and
between profiles; the process then ends as "stopped".
"""
import hashlib
import json
import logging
import math
import os
import resource
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")

_lock = threading.Lock()
_protocol = sys.stdout  # until main() opens descriptor 3

# Integrator tolerances: tight enough that finite-difference gradients (step FD_STEP on the
# parameter scale) are not noise, and that Boehm's nominal value meets AMICI's within 1e-8.
RELATIVE_TOLERANCE = 1e-10
ABSOLUTE_TOLERANCE = 1e-12
FD_STEP = 1e-5
# The Gauss-Newton view: a Hessian eigenvalue below this share of the largest is flat, and a
# parameter whose squared loading on flat directions exceeds FLAT_LOADING has no interval.
FLAT_CURVATURE = 1e-5
FLAT_LOADING = 1e-3
# Evaluations are sent in chunks of at most this many rows or this many seconds.
CHUNK_ROWS = 2000
CHUNK_SECONDS = 1.0
VERSIONED = ("petab", "pypesto", "libroadrunner", "fides", "scipy", "numpy")


def emit(obj):
    line = json.dumps(obj, allow_nan=False, default=_plain)
    with _lock:
        _protocol.write(line + "\n")
        _protocol.flush()


def _plain(v):
    if hasattr(v, "tolist"):
        return v.tolist()
    raise TypeError(f"not JSON: {type(v).__name__}")


def _text(v):
    """A table's optional text cell: absent or empty is None."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) or str(v) == "" else str(v)


def finite(v):
    """A number for JSON: non-finite values (a failed simulation's inf) become null."""
    v = float(v)
    return v if math.isfinite(v) else None


def cpu_seconds():
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def fail(code, message):
    emit({"type": "error", "code": code, "message": str(message)[:4000]})
    sys.exit(2)


def versions():
    from importlib.metadata import version
    return {name: version(name) for name in VERSIONED}


class Problem:
    """The PEtab problem and pyPESTO's problem of it (the estimated parameters, on their scales)."""

    def __init__(self, yaml_path):
        import petab.v1 as petab
        from pypesto.objective.roadrunner import PetabImporterRR, SolverOptions

        self.petab = petab.Problem.from_yaml(yaml_path)
        importer = PetabImporterRR(self.petab)
        objective = importer.create_objective()
        objective.solver_options = SolverOptions(relative_tolerance=RELATIVE_TOLERANCE, absolute_tolerance=ABSOLUTE_TOLERANCE)
        self.pypesto = importer.create_problem(objective=objective)
        free = self.pypesto.x_free_indices
        self.ids = [self.pypesto.x_names[i] for i in free]
        df = self.petab.parameter_df
        self.scales = [str(df.loc[i, "parameterScale"]) for i in self.ids]
        self.lb = [float(v) for v in self.pypesto.lb]
        self.ub = [float(v) for v in self.pypesto.ub]
        self.nominal = [float(v) for v in self.petab.x_nominal_free_scaled]

    def describe(self):
        import re
        m = self.petab.measurement_df
        model = self.petab.model
        sbml = model.sbml_model
        # What a lab of the model needs: its global parameters (with their SBML values) as
        # inputs, and the model's entities that the observable formulas read as outputs.
        model_parameters = {str(k): float(v) for k, v in model.get_parameter_ids_with_values()}
        entities = {e.getId() for e in [*sbml.getListOfSpecies(), *sbml.getListOfParameters(), *sbml.getListOfCompartments()]}
        said = set()
        for formula in self.petab.observable_df["observableFormula"].astype(str):
            said.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula))
        times = m["time"].astype(float)
        df = self.petab.parameter_df
        table = [{"id": str(i), "name": _text(row.get("parameterName")), "scale": str(row.get("parameterScale", "lin")),
                  "lower_bound": finite(row.get("lowerBound", float("nan"))), "upper_bound": finite(row.get("upperBound", float("nan"))),
                  "nominal_value": finite(row.get("nominalValue", float("nan"))), "estimate": bool(int(row.get("estimate", 0)))}
                 for i, row in df.iterrows()]
        return {
            "type": "problem", "parameters": self.ids, "scales": self.scales, "lb": self.lb, "ub": self.ub, "nominal": self.nominal,
            "parameter_table": table,
            "observables": [str(o) for o in self.petab.observable_df.index], "conditions": [str(c) for c in self.petab.condition_df.index],
            "measurements": int(len(m)), "preequilibration": bool("preequilibrationConditionId" in m and m["preequilibrationConditionId"].notna().any()),
            "model": {"id": sbml.getId() or None, "name": sbml.getName() or None, "parameters": model_parameters,
                      "observed": sorted(said & entities), "species": [s.getId() for s in sbml.getListOfSpecies()]},
            "max_time": float(times[times.apply(math.isfinite)].max()) if len(times) else 0.0,
        }

    def simulate(self, x):
        """The NLL at `x` and the digest of its simulations: SHA-256 over each condition's
        simulated trajectories (time and observed entities, float64), conditions in id order."""
        import numpy as np
        ret = self.pypesto.objective(np.asarray(x, dtype=float), return_dict=True)
        h = hashlib.sha256()
        for key in sorted(ret.get("simulation_results") or {}):
            h.update(str(key).encode())
            h.update(np.ascontiguousarray(np.asarray(ret["simulation_results"][key], dtype=float)).tobytes())
        return float(ret["fval"]), h.hexdigest()

    def vector(self, values):
        """A parameter vector from {id: value on scale}; ids not given keep their nominal value."""
        unknown = sorted(set(values) - set(self.ids))
        if unknown:
            fail("parameter_unknown", f"not an estimated parameter of the problem: {', '.join(unknown)}")
        return [float(values.get(i, n)) for i, n in zip(self.ids, self.nominal)]

    def parameter_table(self, x):
        """The parameter table with nominal values set to `x` (unscaled), as petab's calculators read them."""
        import petab.v1 as petab
        df = self.petab.parameter_df.copy()
        for pid, scale, v in zip(self.ids, self.scales, x):
            df.loc[pid, "nominalValue"] = petab.unscale(v, scale)
        return df


def evaluate(problem, request):
    """Each set's negative log-likelihood, and with `petab_llh` the petab library's own
    likelihood and χ² of its simulations (about a second each), with their digest."""
    import numpy as np
    import petab.v1 as petab
    from pypesto.objective.roadrunner import simulation_to_measurement_df

    for index, values in enumerate(request.get("sets") or [{}]):
        x = problem.vector(values)
        ret = problem.pypesto.objective(np.asarray(x), return_dict=True)
        out = {"type": "evaluation", "index": index, "x": x, "fval": finite(ret["fval"])}
        if request.get("petab_llh") or request.get("simulations"):
            m = problem.petab.measurement_df
            sim = simulation_to_measurement_df(ret["simulation_results"], m)
            table = sim.to_csv(sep="\t", index=False)
            out["simulation_sha256"] = hashlib.sha256(table.encode()).hexdigest()
            if request.get("petab_llh"):
                pars = problem.parameter_table(x)
                out["petab_llh"] = finite(petab.calculate_llh(m, sim, problem.petab.observable_df, pars))
                out["petab_chi2"] = finite(petab.calculate_chi2(m, sim, problem.petab.observable_df, pars))
            if request.get("simulations"):
                out["simulations"] = table
        emit(out)


class Recorder:
    """Every evaluation of one start, sent in chunks, and its best so far."""

    def __init__(self, start, f, budget, stop):
        self.start, self.f, self.budget, self.stop = start, f, budget, stop
        self.rows, self.n, self.sent = [], 0, time.monotonic()
        self.best = (math.inf, None)

    def __call__(self, x):
        if self.stop.is_set():
            raise Stopped()
        if self.n >= self.budget:
            raise BudgetSpent()
        v, digest = self.f(x)
        self.n += 1
        self.rows.append([self.n, finite(v), digest, *map(float, x)])
        if v < self.best[0]:
            self.best = (v, [float(c) for c in x])
        if len(self.rows) >= CHUNK_ROWS or time.monotonic() - self.sent > CHUNK_SECONDS:
            self.flush()
        return v

    def __deepcopy__(self, memo):
        # pyPESTO copies a problem's objective before optimising it: the copy must record here.
        return self

    def flush(self):
        if self.rows:
            emit({"type": "evaluations", "start": self.start, "rows": self.rows})
            self.rows = []
        if self.best[1] is not None:
            emit({"type": "start_best", "start": self.start, "n_fval": self.n, "fval": self.best[0], "x": self.best[1]})
        self.sent = time.monotonic()


class Stopped(Exception):
    pass


class BudgetSpent(Exception):
    pass


def optimizer_of(name, max_iterations):
    import fides
    import pypesto.optimize as optimize
    if name == "fides":
        return optimize.FidesOptimizer(hessian_update=fides.BFGS(), options={fides.Options.MAXITER: max_iterations}, verbose=logging.ERROR)
    if name == "lbfgsb":
        return optimize.ScipyOptimizer(method="L-BFGS-B", options={"maxiter": max_iterations})
    fail("optimizer_unknown", f"no optimizer {name!r}: fides or lbfgsb")


def local_problem(problem, f):
    """pyPESTO's problem of the estimated parameters with objective `f` and its central
    finite-difference gradient (pyPESTO's FD, a constant step on the parameter scale)."""
    import pypesto
    from pypesto.objective import FD
    objective = FD(pypesto.Objective(fun=f), grad=True, delta_fun=FD_STEP, delta_grad=FD_STEP, method="central")
    return pypesto.Problem(objective=objective, lb=problem.lb, ub=problem.ub, x_names=problem.ids)


def optimize_starts(problem, request, stop):
    """Local optimisations from the given starts, one after the other; each start's every
    evaluation is sent, and its end point. A start given `x` (with the `n_fval` evaluations
    spent to reach it and its `fval`) resumes from there, its best so far: a start resumed
    with nothing left of its budget ends there, not with no point."""
    import numpy as np
    import pypesto
    import pypesto.optimize as optimize

    budget = int(request.get("max_evaluations", 10000))
    for start in request["starts"]:
        if stop.is_set():
            return
        index = int(start["index"])
        x0 = np.asarray(start.get("x") or start["x0"], dtype=float)
        rec = Recorder(index, problem.simulate, budget - int(start.get("n_fval", 0)), stop)
        if start.get("x") and start.get("fval") is not None:
            rec.best = (float(start["fval"]), [float(c) for c in start["x"]])
        local = local_problem(problem, rec)
        local.set_x_guesses(x0[None, :])
        began = time.monotonic()
        ended = "converged"
        message = ""
        try:
            result = optimize.minimize(local, optimizer=optimizer_of(request.get("optimizer", "fides"), int(request.get("max_iterations", 1000))),
                                       n_starts=1, ids=[str(index)], engine=pypesto.engine.SingleCoreEngine(), progress_bar=False,
                                       options=optimize.OptimizeOptions(allow_failed_starts=True))
            message = str(result.optimize_result.list[0].message)
        except (BudgetSpent, Stopped):
            message = ""
        # pyPESTO may catch what the recorder raises (a failed start): how the start ended
        # is read from the recorder and the stop, not from the optimiser's exit.
        if stop.is_set():
            ended, message = "stopped", "stopped"
        elif rec.n >= rec.budget:
            ended, message = "budget", "the evaluation budget was spent"
        rec.flush()
        fval, x = rec.best
        emit({"type": "start_end", "start": index, "fval": finite(fval), "x": x, "n_fval": rec.n + int(start.get("n_fval", 0)),
              "ended": ended, "message": message[:500], "seconds": time.monotonic() - began})


def profile(problem, request, stop):
    """Each named parameter's profile likelihood from the best point (pyPESTO's profile,
    re-optimising the others at every step), with its 95% interval where it crosses
    ΔNLL = χ²(1, 0.95)/2 on either side."""
    import numpy as np
    import pypesto
    import pypesto.optimize as optimize
    import pypesto.profile as pprofile
    from scipy.stats import chi2

    x_best = np.asarray(request["x"], dtype=float)
    f = lambda x: problem.pypesto.objective(x)
    local = local_problem(problem, f)
    fval = float(f(x_best))
    result = pypesto.Result(local)
    result.optimize_result.append(pypesto.OptimizerResult(id="best", x=x_best, fval=fval, exitflag=0))
    threshold = chi2.ppf(0.95, 1) / 2
    ratio = math.exp(-threshold)
    options = pprofile.ProfileOptions(ratio_min=min(ratio / 2, 0.145), **request.get("options", {}))
    for pid in request["parameters"]:
        if stop.is_set():
            return
        i = problem.ids.index(pid)
        began = time.monotonic()
        result = pprofile.parameter_profile(local, result, optimize.FidesOptimizer(verbose=logging.ERROR), profile_index=[i],
                                            profile_options=options, progress_bar=False, overwrite=True)
        path = result.profile_result.list[-1][i]
        xs, fvals, ratios = path.x_path[i], path.fval_path, path.ratio_path
        low, high = pprofile.calculate_approximate_ci(xs, ratios, ratio)
        # Bounded on a side when the profile rises past the threshold there before the bound.
        below, above = ratios[xs <= x_best[i]], ratios[xs >= x_best[i]]
        bounded = (below.size > 0 and below.min() < ratio, above.size > 0 and above.min() < ratio)
        emit({"type": "profile", "parameter": pid, "points": [[float(a), finite(b)] for a, b in zip(xs, fvals)],
              "threshold": threshold, "low": float(low) if bounded[0] else None, "high": float(high) if bounded[1] else None,
              "identifiability": "identifiable" if all(bounded) else "one_sided" if any(bounded) else "flat",
              "lb": problem.lb[i], "ub": problem.ub[i], "seconds": time.monotonic() - began})


# Second derivatives by finite differences of the NLL: a larger step than the gradient's,
# since the integrator's noise is divided by the step squared.
HESSIAN_STEP = 1e-3


def hessian(problem, request):
    """The Gauss-Newton (asymptotic) view of uncertainty at a point: the NLL's Hessian by
    pyPESTO's central finite differences of function values. A parameter at one of its
    bounds is held there (the optimum is not stationary in it, and its curvature toward
    the bound says nothing), and named so. For the others, the Hessian's eigenvalues and
    each one's standard error on its scale with the 95% interval x ± z·se (z² = χ²(1, 0.95),
    the profile's own threshold), from the directions the curvature is seen in. A direction
    whose curvature is within the differences' noise is flat: a parameter that leans on one
    has no interval (the linearisation cannot see it) and is named `flat`; the others keep
    theirs, whether or not the whole Hessian is positive definite."""
    import numpy as np
    import pypesto
    from pypesto.objective import FD
    from scipy.stats import chi2

    x = np.asarray(request["x"], dtype=float)
    lb, ub = np.asarray(problem.lb), np.asarray(problem.ub)
    near = 1e-6 * (ub - lb)
    at_bound = ["lower" if v - lo <= n else "upper" if hi - v <= n else None for v, lo, hi, n in zip(x, lb, ub, near)]
    free = [i for i, b in enumerate(at_bound) if b is None]

    def f(v):
        full = x.copy()
        full[free] = v
        return problem.pypesto.objective(full)

    fd = FD(pypesto.Objective(fun=f), grad=True, hess=True, hess_via_fval=True,
            delta_fun=HESSIAN_STEP, delta_grad=HESSIAN_STEP, method="central")
    ret = fd(x[free], sensi_orders=(0, 2), return_dict=True)
    h = (np.asarray(ret["hess"]) + np.asarray(ret["hess"]).T) / 2
    eigenvalues, vectors = np.linalg.eigh(h) if free else (np.zeros(0), np.zeros((0, 0)))
    positive = bool(free) and bool(eigenvalues.min() > 1e-8 * max(1.0, abs(eigenvalues).max()))
    # Curvature below this share of the largest is noise: the NLL's integration noise
    # (about 1e-8 at our tolerances) over the step squared is about 1e-2, and Boehm's
    # largest curvature is about 6e3.
    seen = eigenvalues > FLAT_CURVATURE * max(1.0, abs(eigenvalues).max()) if free else np.zeros(0, dtype=bool)
    z = math.sqrt(chi2.ppf(0.95, 1))
    se = [None] * len(x)
    flat = []
    for k, i in enumerate(free):
        # A parameter leaning on an unseen direction has unbounded variance there.
        if (vectors[k, ~seen] ** 2).sum() > FLAT_LOADING:
            flat.append(problem.ids[i])
            continue
        se[i] = float(math.sqrt((vectors[k, seen] ** 2 / eigenvalues[seen]).sum()))
    emit({"type": "hessian", "x": x, "fval": finite(ret["fval"]), "free": [problem.ids[i] for i in free], "hessian": h, "eigenvalues": eigenvalues,
          "positive_definite": positive, "flat": flat, "at_bound": at_bound, "se": se, "z": z,
          "low": [None if s is None else float(v - z * s) for v, s in zip(x, se)],
          "high": [None if s is None else float(v + z * s) for v, s in zip(x, se)]})


def noise_of(evaluate, row, formulas, pars, scaled):
    """A measurement's noise as the petab library evaluates it, or None where it cannot
    (a noise formula reading the model's states, which petab's evaluator does not take):
    the fit is still drawn, without that point's band."""
    try:
        return finite(evaluate(row, formulas, pars, scaled))
    except (ValueError, TypeError):
        return None


def fit(problem, request):
    """Each measurement beside its simulation at a point, with the noise the likelihood gives
    it there (the observable's noise formula, evaluated by the petab library with the
    point's parameters), and each observable's transformation and noise distribution: what
    a reader needs to draw the fit with its band."""
    import numpy as np
    import petab.v1 as petab
    from petab.v1.calculate import evaluate_noise_formula, get_symbolic_noise_formulas
    from pypesto.objective.roadrunner import simulation_to_measurement_df

    x = [float(v) for v in request["x"]]
    ret = problem.pypesto.objective(np.asarray(x), return_dict=True)
    m = problem.petab.measurement_df
    sim = simulation_to_measurement_df(ret["simulation_results"], m)
    observables = problem.petab.observable_df
    pars = problem.parameter_table(x)
    formulas = get_symbolic_noise_formulas(observables)
    transformation = {str(o): str(observables.loc[o].get("observableTransformation", "lin") or "lin") for o in observables.index}
    distribution = {str(o): str(observables.loc[o].get("noiseDistribution", "normal") or "normal") for o in observables.index}
    for o in transformation:
        transformation[o] = "lin" if transformation[o] == "nan" else transformation[o]
        distribution[o] = "normal" if distribution[o] == "nan" else distribution[o]
    rows = []
    for (_, row), s in zip(m.iterrows(), sim["simulation"]):
        obs = str(row["observableId"])
        scaled = petab.scale(float(s), transformation[obs])
        pre = row.get("preequilibrationConditionId")
        rows.append([obs, str(row["simulationConditionId"]), None if pre is None or (isinstance(pre, float) and math.isnan(pre)) else str(pre),
                     finite(row["time"]), finite(row["measurement"]), finite(s), noise_of(evaluate_noise_formula, row, formulas, pars, scaled)])
    emit({"type": "fit", "x": x, "fval": finite(ret["fval"]), "transformations": transformation, "noise_distributions": distribution, "rows": rows})


TABLES = {"condition": "condition_files", "observable": "observable_files", "measurement": "measurement_files",
          "parameter": "parameter_file", "visualization": "visualization_files", "model": "sbml_files"}
ID_COLUMNS = {"condition": "conditionId", "observable": "observableId", "parameter": "parameterId", "measurement": "observableId"}


def problem_files(yaml_path):
    """The problem's files by table, as its YAML names them (relative to it)."""
    import yaml
    with open(yaml_path) as f:
        config = yaml.safe_load(f) or {}
    files = {"parameter": [config["parameter_file"]] if config.get("parameter_file") else []}
    for sub in config.get("problems") or []:
        for table, key in TABLES.items():
            if table != "parameter":
                files.setdefault(table, []).extend(sub.get(key) or [])
    return files


def locate(yaml_path, table, files, message):
    """Which file, row (its line, the header being line 1) and column a message of the
    lint's check of `table` concerns: the table's file, the column whose name it says,
    and the row whose id it says."""
    import re
    import pandas as pd
    where = {"file": files[0] if len(files) == 1 else None, "row": None, "column": None}
    if table not in ID_COLUMNS or len(files) != 1:
        return where
    try:
        df = pd.read_csv(os.path.join(os.path.dirname(yaml_path), files[0]), sep="\t", dtype=str, keep_default_na=False)
    except Exception:
        return where
    # Words in the order said, leaving out a table's name ("the measurement table").
    said = re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?! table)", message)
    id_column = ID_COLUMNS[table]
    named = [w for w in said if w in df.columns]
    where["column"] = next((c for c in named if c != id_column), named[0] if named else None)
    if id_column in df.columns:
        hit = df.index[df[id_column].isin(set(said))]
        if len(hit):
            where["row"] = int(hit[0]) + 2
            where["column"] = where["column"] or id_column
    return where


def lint(yaml_path):
    """The petab library's own lint of the problem: each error or warning it logs, in its
    words, with the file, row and column it concerns where the message names them (the
    lint says which table it is checking before it checks it)."""
    import petab.v1 as petab
    findings, checking = [], [None]
    try:
        files = problem_files(yaml_path)
    except Exception as err:
        files = {}
        findings.append({"level": "error", "message": f"the problem's YAML cannot be read: {err}"[:2000], "file": os.path.basename(yaml_path), "row": None, "column": None})

    class Collect(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            table = next((t for t in TABLES if message.startswith(f"Checking {t}")), None)
            if table:
                checking[0] = table
            elif record.levelno >= logging.WARNING and message != "Not OK":
                at = locate(yaml_path, checking[0], files.get(checking[0]) or [], message) if checking[0] else {"file": None, "row": None, "column": None}
                findings.append({"level": "error" if record.levelno >= logging.ERROR else "warning", "message": message[:2000], **at})

    handler = Collect(level=logging.INFO)
    lint_logger = logging.getLogger("petab")
    lint_logger.addHandler(handler)
    lint_logger.setLevel(logging.INFO)
    lint_logger.propagate = False
    if not findings:
        try:
            petab.lint_problem(petab.Problem.from_yaml(yaml_path))
        except Exception as err:  # a table the library cannot read: named where the error names it
            message = f"{type(err).__name__}: {err}"[:2000]
            named = next((f for fs in files.values() for f in fs if f in message), None)
            findings.append({"level": "error", "message": message, "file": named, "row": None, "column": None})
    emit({"type": "findings", "findings": findings})
    return findings


# The protocol's plumbing (descriptor 3, heartbeats, SIGTERM) is the lab driver's
# (activities/execution/driver.py) in kind; a warm instance's serving is the same module's
# (forkserve.py, mounted beside this script).
def open_protocol():
    global _protocol
    try:
        os.close(4)  # bubblewrap's report to the worker
    except OSError:
        pass
    try:
        _protocol = os.fdopen(3, "w", buffering=1)
    except OSError:  # run by hand: the protocol goes to stdout
        pass


# What every command needs, loaded once by a warm instance before it forks.
TOOLKIT = ("petab.v1", "pypesto.objective.roadrunner", "pypesto.optimize", "pypesto.profile", "fides", "scipy.stats")


def serve(workdir, sock_path):
    """A warm instance of the engine: the toolkit imported once (seconds of every cold
    start), then each command in a child forked from this pristine process, on a problem
    the worker staged in the scratch (the request's `yaml`). See forkserve.py."""
    import importlib
    try:
        import forkserve
    except ImportError:  # unsandboxed (development): the module is where the repository keeps it
        sys.path.append(str(Path(__file__).resolve().parent.parent / "execution"))
        import forkserve
    warm = json.loads(sys.stdin.readline() or "{}")
    for module in TOOLKIT:
        importlib.import_module(module)
    known = versions()

    def work(request, child_dir):
        os.chdir(child_dir)
        run_command(request.pop("yaml", ""), request, known)

    def report(err):
        emit({"type": "error", "code": "problem_failed", "message": f"{type(err).__name__}: {err}"[:4000]})

    forkserve.serve(workdir, sock_path, bool(warm.get("sweep")), emit, work, report)


def main():
    open_protocol()
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        return serve(Path(sys.argv[2]), Path(sys.argv[3]))
    if len(sys.argv) != 2:
        fail("usage", "usage: engine.py PROBLEM_YAML < request.json")
    emit({"type": "hello", "pid": os.getpid()})
    run_command(sys.argv[1], json.loads(sys.stdin.read() or "{}"), versions())
    # Said and done: exit now, without the interpreter's teardown of the toolkit (seconds
    # on a loaded machine), since the worker kills a process still there 2 s after its
    # protocol closes, and a kill is the run's failure whatever it reported.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_command(yaml_path, request, known_versions):
    """One command on the problem at `yaml_path`, reported from `versions` to `result`."""
    emit({"type": "versions", "versions": known_versions})
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    done = threading.Event()

    def beat():
        while not done.wait(2.0):
            emit({"type": "heartbeat"})

    threading.Thread(target=beat, daemon=True).start()
    command = request.get("command")
    try:
        if command == "lint":
            lint(yaml_path)
        elif command == "inspect":
            if not any(f["level"] == "error" for f in lint(yaml_path)):
                problem = Problem(yaml_path)
                emit(problem.describe())
                evaluate(problem, {"sets": [{}], "petab_llh": True})
        else:
            problem = Problem(yaml_path)
            emit(problem.describe())
            if command == "evaluate":
                evaluate(problem, request)
            elif command == "optimize":
                optimize_starts(problem, request, stop)
            elif command == "profile":
                # The Gauss-Newton view and the fit at the same point first: they take
                # seconds, a profile minutes.
                if request.get("hessian"):
                    hessian(problem, request)
                    fit(problem, request)
                profile(problem, request, stop)
            elif command == "hessian":
                hessian(problem, request)
            elif command == "fit":
                fit(problem, request)
            elif command != "describe":
                fail("command_unknown", f"no command {command!r}")
    except SystemExit:
        raise
    except Exception as err:
        fail("problem_failed", f"{type(err).__name__}: {err}")
    finally:
        done.set()
    emit({"type": "result", "status": "stopped" if stop.is_set() else "completed", "cpu_seconds": cpu_seconds()})


if __name__ == "__main__":
    main()
