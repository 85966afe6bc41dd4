"""``qkv gradescope-bundle LAB``: the autograder .zip that runs this same grader on Gradescope's platform.

The zip holds ``setup.sh`` (installs Python, bubblewrap and the pinned packages), ``run_autograder`` (grades
``/autograder/submission`` into ``/autograder/results/results.json`` with ``qkv grade --gradescope``), a copy
of the ``qkv`` package with its grader and specs, and the lab's solution notebook (the grader reads its
nbgrader metadata; the submission's sandbox never sees it, and run_autograder makes it root-only).

Inside Gradescope's container bubblewrap may be unable to create namespaces; ``qkv grade --gradescope`` then
says so in the results' output and grades with resource limits and a separate unprivileged uid only (the
container itself is a throwaway sandbox for this one submission).
"""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import Path

from .grader import GradeError, load_lab

# Top-level packages a submission's notebook needs; pip resolves the rest. Versions come from requirements.lock
# (torch's from requirements-torch.txt).
PACKAGES = ["torch", "numpy", "matplotlib", "ipywidgets", "ipython"]

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when the autograder image is built.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq python3 python3-venv python3-pip bubblewrap >/dev/null
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "The pinned packages need Python 3.11 or newer: choose Gradescope's Ubuntu 24.04 base image." >&2; exit 1; }
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --upgrade pip
/autograder/venv/bin/pip install --quiet -r /autograder/source/requirements.txt \\
    --extra-index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install --quiet --no-deps /autograder/source/qkv-src
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT and QKV_PYTHON exist for local testing.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{QKV_PYTHON:-$ROOT/venv/bin/python}}"
chmod -R go-rwx "$ROOT/source"          # the submission's uid must not read the solution or the grader
mkdir -p "$ROOT/results" && chmod 755 "$ROOT/results"
cd "$ROOT/source"
"$PY" -m qkv.cli grade {lab} "$ROOT/submission" --out "$ROOT/results" --course "$ROOT/source" \\
    --gradescope --timeout {timeout} --memory {memory} --quiet
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  echo '{{"score": 0, "output": "The autograder failed before grading; please tell your instructor."}}' > "$ROOT/results/results.json"
fi
exit $status
"""


GUIDE = """Gradescope autograder for the qkv lab {lab}
===========================================

Upload this zip as the assignment's autograder ("Zip file upload"), base image Ubuntu 24.04 (Python 3.12;
the pinned packages need Python 3.11+). Students submit their notebook {lab}.ipynb (any name works when it
is the only notebook).

setup.sh         installs Python, bubblewrap and the pinned packages (torch CPU) into /autograder/venv
run_autograder   grades /autograder/submission with `qkv grade --gradescope` into /autograder/results/results.json
qkv-src/         the qkv package with its grader and the grading spec of {lab}
solutions/       the lab's solution notebook (read for its nbgrader metadata; made root-only before grading)

Each test in results.json is one autograded exercise; written answers are graded by hand on Gradescope.
Where Gradescope's container does not let bubblewrap create namespaces, the results' output says so and the
notebook runs with resource limits as a separate unprivileged uid only (the container is itself a throwaway
sandbox for one submission, and that uid can neither read the autograder's files nor write results.json).
Built by `qkv gradescope-bundle {lab}`.
"""


def _pins(course: Path) -> list[str]:
    locks = [Path(course) / name for name in ("requirements.lock", "requirements-torch.txt")]  # torch: its own file
    text = "\n".join(lock.read_text() for lock in locks if lock.exists())
    pins = []
    for name in PACKAGES:
        m = re.search(rf"^{name}==([^\s;#]+)", text, flags=re.M | re.I)
        pins.append(f"{name}=={m.group(1)}" if m else name)
    return pins


def _add(zf: zipfile.ZipFile, arcname: str, data: bytes | str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data.encode() if isinstance(data, str) else data)


def build_bundle(lab: str, course: Path, out: Path, *, timeout: float = 120, memory: int = 4096) -> Path:
    """Write the Gradescope autograder zip for ``lab``; returns its path. Deterministic bytes."""
    course = Path(course)
    info = load_lab(lab, course)  # checks the lab and its spec exist and agree
    src = course / "src" / "qkv"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        _add(zf, "setup.sh", SETUP, executable=True)
        _add(zf, "run_autograder", RUN.format(lab=lab, timeout=timeout, memory=memory), executable=True)
        _add(zf, "requirements.txt", "\n".join(_pins(course)) + "\n")
        _add(zf, "README.txt", GUIDE.format(lab=lab))
        _add(zf, f"solutions/{lab}/{lab}.ipynb", info.solution.read_bytes())
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (course / name).exists():
                _add(zf, f"qkv-src/{name}", (course / name).read_bytes())
        for f in sorted(src.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".typed", ".md"):
                _add(zf, f"qkv-src/src/qkv/{f.relative_to(src).as_posix()}", f.read_bytes())
    if not zipfile.is_zipfile(out):  # pragma: no cover
        raise GradeError(f"could not write {out}")
    return out
