"""pyPESTO in-process, as a scientist runs it alone: the baseline of the PEtab engine's
differential test and of bench:petab. Same problem, same simulator (libroadrunner through
pyPESTO's PEtab importer, at the engine's tolerances), same optimiser (fides with BFGS on
central finite-difference gradients of the engine's step) and the same starts.

Usage: python petab_pypesto.py PROBLEM_YAML SEED N_STARTS [PROFILE_JSON]
Prints one JSON line with the starts (uniform within the bounds on the parameter scale,
numpy's generator of SEED), then, once optimised, one with every start's end point and the
seconds pyPESTO took; given PROFILE_JSON ({"parameters": [...], "options": {...}}: pyPESTO's
ProfileOptions), a third with those parameters' profiles from the best end point and
their 95% intervals.
"""
import json
import logging
import math
import os
import sys
import time
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "activities", "petab"))
import engine  # noqa: E402  (its settings only: the baseline is pyPESTO's own path)


def main():
    yaml_path, seed, n_starts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    began = time.monotonic()
    import fides
    import numpy as np
    import petab.v1 as petab
    import pypesto
    import pypesto.optimize as optimize
    import pypesto.profile as profile
    from pypesto.objective import FD
    from pypesto.objective.roadrunner import PetabImporterRR, SolverOptions
    from scipy.stats import chi2

    importer = PetabImporterRR(petab.Problem.from_yaml(yaml_path))
    objective = importer.create_objective()
    objective.solver_options = SolverOptions(relative_tolerance=engine.RELATIVE_TOLERANCE, absolute_tolerance=engine.ABSOLUTE_TOLERANCE)
    full = importer.create_problem(objective=objective)
    fd = FD(full.objective, grad=True, delta_fun=engine.FD_STEP, delta_grad=engine.FD_STEP, method="central")
    problem = pypesto.Problem(objective=fd, lb=full.lb_full, ub=full.ub_full, x_fixed_indices=full.x_fixed_indices,
                              x_fixed_vals=full.x_fixed_vals, x_names=full.x_names)
    free = problem.x_free_indices
    starts = np.random.default_rng(seed).uniform(problem.lb, problem.ub, size=(n_starts, problem.dim))
    print(json.dumps({"parameters": [problem.x_names[i] for i in free], "starts": starts.tolist()}), flush=True)

    problem.set_x_guesses(np.array([problem.get_full_vector(s, problem.x_fixed_vals) for s in starts]))
    optimizer = optimize.FidesOptimizer(hessian_update=fides.BFGS(), verbose=logging.ERROR)
    result = optimize.minimize(problem, optimizer=optimizer, n_starts=n_starts, ids=[str(i) for i in range(n_starts)],
                               engine=pypesto.engine.SingleCoreEngine(), progress_bar=False)
    ends = sorted(({"start": int(r.id), "fval": float(r.fval), "x": [float(v) for v in r.x[free]], "n_fval": int(r.n_fval)}
                   for r in result.optimize_result.list), key=lambda e: e["start"])
    print(json.dumps({"ends": ends, "seconds": time.monotonic() - began}), flush=True)

    if len(sys.argv) > 4:
        asked = json.loads(sys.argv[4])
        ratio = math.exp(-chi2.ppf(0.95, 1) / 2)
        index = [problem.x_names.index(p) for p in asked["parameters"]]
        options = profile.ProfileOptions(ratio_min=min(ratio / 2, 0.145), **asked.get("options", {}))
        result = profile.parameter_profile(problem, result, optimize.FidesOptimizer(verbose=logging.ERROR), profile_index=index,
                                           profile_options=options, progress_bar=False)
        profiles = []
        for i in index:
            name = problem.x_names[i]
            path = result.profile_result.list[0][i]
            low, high = profile.calculate_approximate_ci(path.x_path[i], path.ratio_path, ratio)
            profiles.append({"parameter": name, "low": float(low), "high": float(high)})
        print(json.dumps({"profiles": profiles, "seconds": time.monotonic() - began}), flush=True)


if __name__ == "__main__":
    main()
