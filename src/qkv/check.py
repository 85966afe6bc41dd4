"""``qkv check LAB NOTEBOOK``: a student's score on the autograded exercises, on their own machine, before they submit.

It is the grader itself (``qkv.grading``: the lab's spec, its hidden cases and its comparison), run on one
notebook without the sandbox (it is the student's own code, on the student's own machine) and with a fixed
seed. It prints each exercise's points and the grader's reasons, then the total; written answers are graded
by hand and only listed. The instructor's run draws other inputs (another seed), so a solution that only
works on some inputs may still lose points there.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from . import checkserver
from .grading.jobs import GRADE, Limits  # the standard library only: `qkv check` starts as fast

if TYPE_CHECKING:
    from .grading.results import Result

__all__ = ["add_parser", "check_notebook"]


def check_notebook(lab: str, notebook: Path, *, course: Path, seed: int = 0, timeout: float = GRADE.timeout) -> Result:
    """Grade one notebook of ``lab`` as ``qkv grade`` would, without the sandbox; the grader's result."""
    from .grading.command import run_batch

    notebook = Path(notebook)
    if not notebook.is_file():
        from .grading.lab import GradeError

        raise GradeError(f"notebook not found: {notebook}")
    with tempfile.TemporaryDirectory(prefix="qkv-check-") as tmp:
        subs = Path(tmp) / "submissions"
        subs.mkdir()
        shutil.copy(notebook, subs / "you.ipynb")
        results = run_batch(
            lab,
            subs,
            Path(tmp) / "out",
            course=course,
            jobs=1,
            limits=Limits.of(timeout, GRADE.memory_mb),
            fresh=True,
            use_sandbox=False,
            fork_worker=True,  # torch is imported here already: no fresh interpreter to wait for
            seed=seed,
            log=lambda *a, **k: None,
        )
    return results[0]


def report(lab: str, result: Result, course: Path, lang: str = "en") -> str:
    """The per-exercise points, the reasons and the total, as printed by ``qkv check`` (in ``lang``)."""
    from .grading import messages as M
    from .grading.lab import load_lab
    from .grading.results import ItemResult

    t = M.translator(lang)
    spec = load_lab(lab, course).spec
    out = []
    if result.status != "graded":
        out.append(t(M.CHECK_INCOMPLETE, status=t.status(result.status), note=t.say(result.note)))
    got = total = 0.0
    for item in spec.autograded:
        r = result.items.get(item.grade_id) or ItemResult(0.0, float(item.points), [M.NOT_GRADED()])
        got, total = got + r.points, total + r.max
        name = t.text(item.title) if item.title else item.function
        out.append(t(M.CHECK_ITEM, name=name, points=f"{r.points:g}", maximum=f"{r.max:g}"))
        out.extend(f"    {t(line)}" for line in r.lines)
    for line in result.cell_errors:
        out.append(t(M.CHECK_NOTE, line=t(line)))
    manual = sum(m.points for m in spec.manual)
    out.append(t(M.CHECK_TOTAL, total=f"{got:g}", maximum=f"{total:g}"))
    if manual:
        out.append(t(M.CHECK_PLUS_MANUAL, points=f"{manual:g}"))
    return "\n".join(out)


def answer(request: dict) -> tuple[int, str, str]:
    """The exit status, output and errors of ``qkv check`` for ``request`` (its arguments, paths absolute), here
    or in the resident checker (``checkserver``), which runs it in a process forked for it."""
    from .grading.lab import GradeError

    with contextlib.suppress(OSError):
        os.chdir(request["cwd"])
    try:
        notebook, course = Path(request["notebook"]), Path(request["course"])
        result = check_notebook(
            request["lab"], notebook, course=course, seed=request["seed"], timeout=request["timeout"]
        )
        return 0, report(request["lab"], result, course, request["lang"]) + "\n", ""
    except GradeError as err:
        return 2, "", f"qkv check: error: {err}\n"


def _check(args: argparse.Namespace) -> int:
    request = {
        "lab": args.lab,
        "notebook": str(Path(args.notebook).absolute()),
        "course": str(Path(args.course).absolute()),
        "seed": args.seed,
        "timeout": args.timeout,
        "lang": args.lang,
        "cwd": os.getcwd(),
    }
    served = checkserver.ask(request)
    rc, out, err = served or answer(request)
    sys.stdout.write(out)
    sys.stderr.write(err)
    if served is None:
        checkserver.start(answer)  # the next check of this session skips the imports this one waited for
        # The command ends here: the interpreter's last garbage collection need not walk torch's objects (seconds).
        gc.freeze()
    return rc


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="your score on a lab's autograded exercises, before you submit (runs the grader on your notebook)"
    )
    p.add_argument("lab", help="lab id, e.g. soft_lookup")
    p.add_argument("notebook", type=Path, help="your notebook, e.g. work/labs/soft_lookup/soft_lookup.ipynb")
    p.add_argument("--course", type=Path, default=Path.cwd(), help="course root (default: current folder)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the grader's inputs (default 0)")
    p.add_argument(
        "--timeout", type=float, default=GRADE.timeout, help="wall-clock seconds for the notebook (default %(default)g)"
    )
    p.add_argument("--lang", choices=["en", "zh"], default="en", help="language of the report: en or zh (中文)")
    p.set_defaults(func=_check)
