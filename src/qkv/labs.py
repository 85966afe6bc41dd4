"""Labs are generated from the solutions by nbgrader itself, never edited by hand.

``solutions/<id>/<id>.ipynb`` (nbgrader's source layout) -> ``labs/<id>/<id>.ipynb`` (its release
layout), with ``nbgrader generate_assignment --no-db --force``. ``check`` regenerates into a
temporary copy and compares bytes with the committed labs.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["lab_ids", "generate", "check", "copy_workspace"]

SOURCE, RELEASE = "solutions", "labs"


def lab_ids(course: Path) -> list[str]:
    """Every lab with a solution notebook ``solutions/<id>/<id>.ipynb``, sorted."""
    root = Path(course) / SOURCE
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.ipynb").is_file()) if root.is_dir() else []


def generate(course: Path, ids: list[str] | None = None) -> None:
    """Run ``nbgrader generate_assignment`` for each lab in ``ids`` (default: all) under ``course``."""
    course = Path(course).resolve()
    for lab in ids or lab_ids(course):
        cmd = [
            sys.executable, "-m", "nbgrader", "generate_assignment", lab, "--no-db", "--force", "--quiet",
            f"--CourseDirectory.root={course}",
            f"--CourseDirectory.source_directory={SOURCE}",
            f"--CourseDirectory.release_directory={RELEASE}",
        ]  # fmt: skip
        # nbgrader exits 0 even when it skips a notebook, so its log is checked too.
        done = subprocess.run(cmd, cwd=course, capture_output=True, text=True)
        if done.returncode != 0 or "[ERROR]" in done.stderr:
            raise RuntimeError(f"nbgrader generate_assignment {lab} failed:\n{done.stdout}{done.stderr}")


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}


def check(course: Path) -> list[str]:
    """Regenerate every lab in a temporary folder; return the committed files that differ, are missing or extra."""
    course = Path(course).resolve()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="qkv-labs-") as tmp:
        shutil.copytree(course / SOURCE, Path(tmp) / SOURCE)
        shutil.copy(course / "nbgrader_config.py", tmp)
        generate(Path(tmp))
        fresh, committed = Path(tmp) / RELEASE, course / RELEASE
        fresh_files = _files(fresh)
        committed_files = _files(committed) if committed.is_dir() else set()
        for rel in sorted(fresh_files | committed_files):
            if rel not in committed_files:
                problems.append(f"{RELEASE}/{rel}: missing (run `qkv labs`)")
            elif rel not in fresh_files:
                problems.append(f"{RELEASE}/{rel}: not generated from any solution")
            elif not filecmp.cmp(fresh / rel, committed / rel, shallow=False):
                problems.append(f"{RELEASE}/{rel}: differs from what nbgrader generates (edited by hand? run `qkv labs`)")
    return problems


def copy_workspace(course: Path, dest: Path) -> list[Path]:
    """Copy each lab into ``dest`` for a student, never overwriting a copy already there. Returns what was copied."""
    copied = []
    for lab in lab_ids(course):
        src, target = Path(course) / RELEASE / lab, Path(dest) / lab
        for f in sorted(p for p in src.rglob("*") if p.is_file()):
            out = target / f.relative_to(src)
            if not out.exists():
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out)
                copied.append(out)
    return copied
