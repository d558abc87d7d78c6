"""Packs a lab folder with the runtime's own packer and prints its identity as JSON:
{"archive": path, "package_sha256": "<logical hash hex>", "runtime_problems": [...],
"files": [{"path", "sha256"}, ...]}.

`runtime_problems` lists what this runtime environment (the one every worker runs labs
in) cannot satisfy: a different `runtime.python_version`, or model dependencies that are
not installed. Nothing is ever installed for a lab; such a lab is refused at plan time.

Usage: python pack.py LAB_DIR OUT_ARCHIVE PACKAGE VERSION
"""
import json
import sys
import zipfile
from pathlib import Path

import yaml
from biosimulant.pack import build_package, validate_package

lab, out, package, version = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
archive = build_package(lab, output_path=out, package_name=package, version=version)
checked = validate_package(archive)
if not checked.valid:
    print(json.dumps({"error": "; ".join(checked.errors)}))
    sys.exit(2)
meta = yaml.safe_load(zipfile.ZipFile(archive).read("package.yaml"))


def runtime_problems(lab_dir: Path) -> list:
    from biosim.dependency_runtime import collect_requirements, require_current_environment
    lab_manifest = yaml.safe_load((lab_dir / "lab.yaml").read_text()) or {}
    problems = []
    wanted = str((lab_manifest.get("runtime") or {}).get("python_version") or "")
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    if wanted and wanted != have:
        problems.append(f"the lab requires Python {wanted}; the runtime has Python {have}")
    manifests = [(str(m), yaml.safe_load(m.read_text()) or {}) for m in sorted(lab_dir.glob("models/*/model.yaml"))]
    try:
        require_current_environment(collect_requirements(manifests))
    except Exception as exc:  # the runtime's own words for what is missing or conflicting
        problems.append(str(exc).split(". Use ")[0])
    return problems


# Every entry with its sha256, as the archive's own integrity list records it.
sums = zipfile.ZipFile(archive).read("integrity/sha256sums.txt").decode().splitlines()
files = [{"path": name, "sha256": digest} for digest, name in (line.split("  ", 1) for line in sums if line.strip())]
print(json.dumps({"archive": str(archive), "package_sha256": meta["sha256"], "runtime_problems": runtime_problems(lab), "files": files}))
