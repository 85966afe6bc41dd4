"""``qkv gradescope-bundle LAB``: the autograder .zip that runs this same grader on Gradescope's platform.

The zip holds ``setup.sh`` (installs Python, bubblewrap and the pinned packages), ``run_autograder`` (grades
``/autograder/submission`` into ``/autograder/results/results.json`` with ``qkv grade --gradescope``, with the
bundle's ``--timeout`` and ``--memory``), a copy of the ``qkv`` package with its grader and this lab's spec
only, the lab's solution notebook (the grader reads its nbgrader metadata; the submission's sandbox never
sees it, and run_autograder makes it root-only) and the released lab (its cells are not the student's own).
README.txt names the container size to choose, from the kernel's peak memory (a cgroup's) and the time of one
submission measured by ``benchmarks/gradescope_memory.py``.

Inside Gradescope's container bubblewrap may be unable to create namespaces; ``qkv grade --gradescope`` then
says so in the results' output and grades with resource limits and a separate unprivileged uid only (the
container itself is a throwaway sandbox for this one submission).

Layer: grader side, above ``lab``; imports the standard library, ``qkv.labs`` and ``lab``.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import textwrap
import zipfile
from pathlib import Path

from qkv.labs import EDITIONS, lab_ids

from .jobs import GRADESCOPE, Limits
from .lab import GradeError, load_lab
from .messages import GS_FAILED, translator

# Top-level packages a submission's notebook needs; pip resolves the rest. Versions come from requirements.lock
# (torch's from requirements-torch.txt).
# nbgrader: the grader may recognise an earlier release's locked cells by nbgrader's checksum.
PACKAGES = ["torch", "numpy", "matplotlib", "ipywidgets", "ipython", "nbgrader"]

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
PY=/autograder/venv/bin/python
# torch-check: where PyTorch's CPU index is unreachable, pip takes PyPI's CUDA build (gigabytes) without a word
"$PY" -c 'import sys, torch
cpu = torch.version.cuda is None and (sys.platform != "linux" or torch.__version__.endswith("+cpu"))
sys.exit(0 if cpu else f"torch {torch.__version__} (CUDA {torch.version.cuda}) is not the CPU build")' || {
  echo "setup.sh: torch must be the CPU build from https://download.pytorch.org/whl/cpu (was it reachable?);" \\
       "rebuild the autograder image when it is." >&2; exit 1; }
# end torch-check
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT and QKV_PYTHON exist for local testing.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{QKV_PYTHON:-$ROOT/venv/bin/python}}"
chmod -R go-rwx "$ROOT/source"          # the submission's uid must not read the solution or the grader
mkdir -p "$ROOT/results" && chmod 755 "$ROOT/results"
cd "$ROOT/source"
# qkv grade has written and closed every file and stopped its worker when main returns: os._exit skips the
# interpreter's teardown with torch loaded (seconds per submission).
"$PY" -c 'import os, sys; from qkv.cli import main; status = main(sys.argv[1:]); sys.stdout.flush(); sys.stderr.flush(); os._exit(status)' \\
    grade {lab} "$ROOT/submission" --out "$ROOT/results" --course "$ROOT/source" \\
    --gradescope --timeout {timeout:g} --memory {memory} --lang {lang} --quiet
status=$?
if [ ! -s "$ROOT/results/results.json" ]; then
  echo '{failed}' > "$ROOT/results/results.json"
fi
exit $status
"""


# Gradescope's container sizes (Autograder Settings), smallest first: (CPUs, memory in MB). The default is the first.
CONTAINERS = [(0.5, 768), (1.0, 1536), (2.0, 3072), (4.0, 6144)]
MEASURED = "benchmarks/results/gradescope_memory.json"  # written by benchmarks/gradescope_memory.py

GUIDE = """Gradescope autograder for the qkv lab {lab}
===========================================

Upload this zip as the assignment's autograder ("Zip file upload"), base image Ubuntu 24.04 (Python 3.12;
the pinned packages need Python 3.11+). Students submit their notebook {lab}.ipynb (any name works when it
is the only notebook).

{size}
Limits per submission (passed to the grader): {timeout:g} s wall clock, {memory} MB of memory for the
submission's own code; a submission over them gets 0 on the items it did not finish and a status saying
why, instead of Gradescope killing the whole run. Rebuild with `qkv gradescope-bundle {lab} --timeout S
--memory MB` to change them; keep the container's memory above the measured peak plus what --memory allows.

setup.sh         installs Python, bubblewrap and the pinned packages into /autograder/venv; stops with a message
                 when torch is not the CPU build (PyTorch's CPU index unreachable: PyPI's CUDA build, gigabytes)
run_autograder   grades /autograder/submission with `qkv grade --gradescope` into /autograder/results/results.json
qkv-src/         the qkv package with its grader, the grading spec of {lab} and the specs' shared helpers
                 (no other lab's spec)
solutions/       the lab's solution notebook (read for its nbgrader metadata; made root-only before grading)
labs/            the released lab, both editions (the cells students did not write are not held against them)

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


def container_advice(lab: str, course: Path, memory: int) -> str:
    """The container size for ``lab``: the smallest with the kernel's measured peak of one correct submission
    (its cgroup's, as a container's limit counts it) plus the ``memory`` a submission's own code may take."""
    path = Path(course) / MEASURED
    rows = json.loads(path.read_text()).get("labs", {}) if path.exists() else {}
    row = rows.get(lab)
    if not row:
        return (
            f"not measured for this lab (run benchmarks/gradescope_memory.py); choose {_size(CONTAINERS[1])} "
            f"or more: the measured labs peak at about 400-500 MB, which with --memory is above "
            f"Gradescope's default {_size(CONTAINERS[0])}."
        )
    need = row["peak_mb"] + memory
    cpus, mb = next((c for c in CONTAINERS if c[1] >= need), CONTAINERS[-1])
    default = "" if (cpus, mb) != CONTAINERS[0] else " (Gradescope's default)"
    verdict = "is enough." if mb == CONTAINERS[0][1] else "is too small for that."
    checked = [r for r in row.get("runs", []) if r.get("limit_mb") and r.get("notebook") == "correct"]
    passed = [r["limit_mb"] for r in checked if r["score"] == r["max_score"] and not r["oom_kills"]]
    return (
        f"{_size((cpus, mb))}{default}: one correct submission peaked at {row['peak_mb']:.0f} MB (the kernel's "
        f"peak for its cgroup: grader, worker and notebook together, page cache included; measured by "
        f"benchmarks/gradescope_memory.py) plus up to {memory} MB that a submission's own code may take "
        f"(--memory) make {need:.0f} MB. It took {row['seconds']:.0f} s on {row['machine']} (Gradescope's default "
        f"share is half a CPU). Gradescope's default {_size(CONTAINERS[0])} {verdict}"
        + (
            f" The correct submission got full marks at {', '.join(f'{m} MB' for m in passed)} with one CPU."
            if passed
            else ""
        )
        + " The risk is a container below the peak plus --memory: there, a submission that stays within "
        "--memory (a 400 MB tensor under --memory 512 in 768 MB) gets the whole run killed for memory and 0 "
        "points; choose the size named, or lower --memory to the container's size minus the peak."
    )


def _size(container: tuple[float, int]) -> str:
    cpus, mb = container
    return f"{cpus:g} CPU, {mb / 1024:g} GB" if mb >= 1024 else f"{cpus:g} CPU, {mb} MB"


def _bundled(rel: Path, lab: str, labs: set[str]) -> bool:
    """The package files a bundle carries: the library and grader with its translations, and of the specs
    ``lab``'s and the helpers specs share (``contracts.py``), no other lab's (``labs``: the course's labs)."""
    if rel.suffix not in (".py", ".typed", ".mo") or "__pycache__" in rel.parts:
        return False
    return rel.parts[:2] != ("grading", "specs") or rel.stem == lab or rel.stem not in labs


def layout(bundle: Path, root: Path, submission: Path) -> dict:
    """Lay out ``bundle`` as Gradescope does (``root/source``, ``root/submission``, ``root/results``) with
    ``submission`` (a notebook), to try a bundle locally; returns the environment that runs
    ``root/source/run_autograder`` with this Python and the bundle's own copy of ``qkv``."""
    root = Path(root)
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            zf.extract(info, root / "source")
            mode = info.external_attr >> 16 & 0o777
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    (root / "submission").mkdir(parents=True, exist_ok=True)
    (root / "submission" / Path(submission).name).write_bytes(Path(submission).read_bytes())
    return {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        "QKV_PYTHON": sys.executable,
        "PYTHONPATH": str(root / "source" / "qkv-src" / "src"),
    }


def build_bundle(lab: str, course: Path, out: Path, *, limits: Limits = GRADESCOPE, lang: str = "en") -> Path:
    """Write the Gradescope autograder zip for ``lab``; returns its path. Deterministic bytes.

    ``limits``: the wall clock and memory per submission that run_autograder passes to ``qkv grade`` (which
    derives the CPU limits from them); the defaults allow for Gradescope's slow half CPU and fit the container
    README.txt names. ``lang``: the language of the students' results (``en`` or ``zh``).
    """
    course = Path(course)
    timeout, memory = limits.timeout, limits.memory_mb
    if timeout <= 0 or memory <= 0:
        raise GradeError(f"--timeout and --memory must be positive; got {timeout:g} s and {memory} MB")
    if load_lab(lab, course).course is None:  # checks the lab and its spec exist and agree
        raise GradeError(f"no solutions/{lab}/{lab}.ipynb under {course}: the bundle grades with the course's own")
    src = course / "src" / "qkv"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as zf:
        _add(zf, "setup.sh", SETUP, executable=True)
        # run_autograder's own fallback, in the students' language; a JSON line inside shell single quotes
        failed = json.dumps({"score": 0, "output": translator(lang)(GS_FAILED)}, ensure_ascii=False)
        run = RUN.format(lab=lab, timeout=timeout, memory=memory, lang=lang, failed=failed.replace("'", "'\\''"))
        _add(zf, "run_autograder", run, executable=True)
        _add(zf, "requirements.txt", "\n".join(_pins(course)) + "\n")
        size = textwrap.fill(container_advice(lab, course, memory), 110, initial_indent="Container size: ")
        guide = GUIDE.format(lab=lab, size=size, timeout=timeout, memory=memory)
        _add(zf, "README.txt", guide)
        _add(zf, f"solutions/{lab}/{lab}.ipynb", (course / "solutions" / lab / f"{lab}.ipynb").read_bytes())
        # the released lab, both editions: the cells a student did not write (the lab's own self-checks may call
        # what its exercises forbid), and the written questions as each edition's students read them
        for release, _ in EDITIONS.values():
            released = course / release / lab / f"{lab}.ipynb"
            if released.is_file():
                _add(zf, f"{release}/{lab}/{lab}.ipynb", released.read_bytes())
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (course / name).exists():
                _add(zf, f"qkv-src/{name}", (course / name).read_bytes())
        labs = set(lab_ids(course)) | {p.stem for p in (src / "grading" / "specs").glob("*.json")}  # + records
        for f in sorted(src.rglob("*")):
            if f.is_file() and _bundled(f.relative_to(src), lab, labs):
                _add(zf, f"qkv-src/src/qkv/{f.relative_to(src).as_posix()}", f.read_bytes())
    if not zipfile.is_zipfile(out):  # pragma: no cover
        raise GradeError(f"could not write {out}")
    return out
