"""Packs a lab folder with the runtime's own packer and prints its identity as JSON:
{"archive": path, "package_sha256": "<logical hash hex>"}.

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
print(json.dumps({"archive": str(archive), "package_sha256": meta["sha256"]}))
