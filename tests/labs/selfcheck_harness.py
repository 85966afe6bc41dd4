"""Run a lab's visible self-checks in-process against a planted bug (the grader's bug tables, reused).

The solution notebook's code cells run once in one namespace, with the hidden tests stripped (what a student
sees) and matplotlib's Agg backend; the namespace (and torch's RNG state) before each cell is kept. A bug in
function ``f`` restarts from the snapshot before ``f``'s cell, defines the buggy ``f`` and runs the cells
after it until the first one that raises: that cell's grade_id and message are what the student would see.
The Chinese edition runs the same solution translated as ``qkv labs --edition zh`` translates it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import textwrap
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import torch

from qkv import i18n, selfcheck
from qkv.grading.testing import COURSE, solution_notebook

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


def bug_table(lab: str) -> dict[str, tuple[str, str, set[str]]]:
    """The planted bugs of ``tests/grading/test_spec_<lab>.py`` (imported, not copied)."""
    path = COURSE / "tests" / "grading" / f"test_spec_{lab}.py"
    spec = importlib.util.spec_from_file_location(f"_spec_bugs_{lab}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BUGS


@dataclass
class Outcome:
    cell: str  # grade_id of the cell that raised, "" when every cell ran
    message: str  # the exception as the student sees it: "AssertionError: ..."


def edition_notebook(lab: str, language: str) -> dict:
    """The solution notebook in ``language`` ("en", or a catalog's: "zh_CN"), translated from the lab's catalog."""
    nb = solution_notebook(lab)
    if language == "en":
        return nb
    catalog = i18n.load_catalog(i18n.catalog_path(COURSE, language, f"labs/{lab}/{lab}"))
    return i18n.translate_notebook(nb, catalog)[0]


class LabRun:
    def __init__(self, lab: str, language: str = "en"):
        self.lab, self.language = lab, language
        self.cells: list[tuple[str, str, bool]] = []  # (grade_id, source, is a graded test cell)
        for cell in edition_notebook(lab, language)["cells"]:
            if cell["cell_type"] != "code":
                continue
            meta = cell["metadata"].get("nbgrader", {})
            src = HIDDEN.sub("", "".join(cell["source"]))
            self.cells.append((meta.get("grade_id", ""), src, bool(meta.get("grade"))))
        self.snapshots: list[tuple[dict, torch.Tensor]] = []
        ns: dict = {"__name__": "__main__"}
        for n, (gid, src, _) in enumerate(self.cells):
            self.snapshots.append((dict(ns), torch.get_rng_state()))
            err = self._exec(src, ns)
            if err:
                raise AssertionError(f"the solution of {lab} fails in cell {gid or n}: {err}")

    @staticmethod
    def _exec(src: str, ns: dict) -> str | None:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(src, "<cell>", "exec"), ns)
        except Exception as err:
            return f"{type(err).__name__}: {err}"
        finally:
            plt.close("all")
        return None

    def index_defining(self, name: str) -> int:
        pattern = re.compile(rf"^(def|class)\s+{re.escape(name)}\b", re.M)
        for n, (_, src, _) in enumerate(self.cells):
            if pattern.search(src):
                return n
        raise LookupError(f"no code cell of {self.lab} defines {name}")

    def run_with(self, function: str, source: str) -> Outcome:
        selfcheck.use_language(self.language)  # the setup cell's choice; another run may have changed it since
        start = self.index_defining(function)
        saved, rng = self.snapshots[start]
        ns = dict(saved)
        torch.set_rng_state(rng)
        err = self._exec(textwrap.dedent(source).strip("\n") + "\n", ns)
        if err:
            return Outcome(self.cells[start][0], err)
        for gid, src, _ in self.cells[start + 1 :]:
            err = self._exec(src, ns)
            if err:
                return Outcome(gid, err)
        return Outcome("", "")
