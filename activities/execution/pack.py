"""Packs a lab folder with the runtime's own packer and prints its identity as JSON:
{"archive": path, "package": name, "version": v, "package_sha256": "<logical hash hex>",
"files": [{"path", "sha256"}, ...]}, or {"error": "<the packer's own message>"} with exit
status 2 when the runtime refuses the lab (it is the author's to fix, not a crash).

PACKAGE and VERSION may be empty: the lab.yaml then declares its own, which the packer
uses (it refuses an override that differs from a declared value). Whether the runtime can
satisfy the lab's pins is checked in TypeScript against the committed lock
(storage/runtimePins.ts), not here.

Usage: python pack.py LAB_DIR OUT_ARCHIVE PACKAGE VERSION
"""
import json
import sys
import zipfile
from pathlib import Path

import yaml
from biosimulant.pack import build_package, validate_package


def fail(message: str) -> None:
    print(json.dumps({"error": message}))
    sys.exit(2)


lab, out = Path(sys.argv[1]), Path(sys.argv[2])
package, version = sys.argv[3] or None, sys.argv[4] or None
try:
    archive = build_package(lab, output_path=out, package_name=package, version=version)
except Exception as exc:  # PackageError, YAML errors: the runtime's own words reach the author
    fail(str(exc) or type(exc).__name__)
checked = validate_package(archive)
if not checked.valid:
    fail("; ".join(checked.errors))
meta = yaml.safe_load(zipfile.ZipFile(archive).read("package.yaml"))

# Every entry with its sha256, as the archive's own integrity list records it.
sums = zipfile.ZipFile(archive).read("integrity/sha256sums.txt").decode().splitlines()
files = [{"path": name, "sha256": digest} for digest, name in (line.split("  ", 1) for line in sums if line.strip())]
print(json.dumps({"archive": str(archive), "package": meta["package"], "version": str(meta["version"]),
                  "package_sha256": meta["sha256"], "files": files}))
