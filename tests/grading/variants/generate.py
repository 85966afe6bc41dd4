"""Variants of a lab's completed notebook: named rewrites applied in a fixed order, a classic bug planted last.

A :class:`Variant` is named by its lab, its seed and its list of rewrites (and its bug); building it again
gives the same notebook byte for byte.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from qkv.grading.spec import load_spec
from qkv.grading.testing import completed_lab, with_function

from . import code, notebook
from .cells import Context, NotApplicable

TESTS = Path(__file__).resolve().parent.parent  # tests/grading


@functools.cache
def spec_test(lab: str):
    """The module ``tests/grading/test_spec_<lab>.py``: its BUGS and ALTERNATIVES tables."""
    return _load(f"_variants_spec_{lab}", TESTS / f"test_spec_{lab}.py")


def bugs(lab: str) -> dict[str, tuple[str, str, set[str]]]:
    """The classic bugs of the lab's spec test: name -> (function, source, grade_ids that lose points)."""
    return spec_test(lab).BUGS


def spec_alternative(nb: dict, ctx) -> None:
    """One of the spec test's hand-written correct alternatives (loops, einsum, float64, autograd, ...)."""
    alternatives = spec_test(ctx.lab).ALTERNATIVES
    for function, source in alternatives[ctx.rng.choice(sorted(alternatives))].items():
        nb.update(with_function(nb, function, source))


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@functools.cache
def corpus_builder():
    """``tests/grading/corpus/build.py`` (loaded by path: ``build`` is also the name of an installed package)."""
    return _load("_variants_corpus_build", TESTS / "corpus" / "build.py")


@functools.cache
def corpus_table(lab: str) -> dict:
    """The corpus's hand-written submissions of the lab (``tests/grading/corpus/<lab>.py``, which imports
    ``build``: the corpus's own, for the time of the import)."""
    saved = sys.modules.get("build")
    sys.modules["build"] = corpus_builder()
    try:
        return _load(f"_variants_corpus_{lab}", TESTS / "corpus" / f"{lab}.py").CORPUS
    finally:
        if saved is None:
            del sys.modules["build"]
        else:
            sys.modules["build"] = saved


def corpus_loops(nb: dict, ctx) -> None:
    """A correct hand-written submission of the corpus that loops where the solution is vectorised."""
    table = corpus_table(ctx.lab)
    correct = sorted(
        name
        for name, sub in table.items()
        if not sub.lose and sub.status == "graded" and "for " in "".join(sub.edits.values())
    )
    if not correct:
        raise NotApplicable("no correct corpus submission with loops")
    sub = table[ctx.rng.choice(correct)]
    for function, source in sub.edits.items():
        nb.update(with_function(nb, function, source))
    for n, (after, source) in enumerate(sub.add):
        nb.update(corpus_builder().add_cell(nb, after, source, f"corpus-{n}"))


# In the order they apply: the hand-written alternatives first, then the syntax-tree rewrites, the scratch
# cells, the text rewrites (comments and magics: ast.unparse would drop them) and the locked cells last.
REWRITES = {
    f.__name__: f
    for f in (
        spec_alternative,
        corpus_loops,
        code.rename_locals,
        code.builtin_names,
        code.strip_annotations,
        code.extra_optional_arg,
        code.float64_inside,
        code.einsum_matmul,
        code.numpy_roundtrip,
        code.print_inside,
        code.methods_named_like_helpers,
        code.class_state,
        code.forbidden_method,
        code.helper_before,
        code.helper_after,
        code.helper_next_cell,
        code.decorator_timed,
        notebook.stdlib_imports,
        notebook.sys_os_imports,
        notebook.scratch_plot,
        notebook.scratch_help,
        notebook.library_in_scratch,
        notebook.reseed,
        notebook.explore_longer,
        notebook.chinese_comments,
        notebook.cell_magic_time,
        notebook.cell_magic_capture,
        notebook.line_magics,
        notebook.old_release,
    )
}
# Rewrites that change how the answers call each other: a planted bug's own source would not follow them.
NOT_WITH_BUGS = {"extra_optional_arg"}


@dataclass(frozen=True)
class Variant:
    lab: str
    seed: int
    rewrites: tuple[str, ...]
    bug: str | None = None

    @property
    def name(self) -> str:
        bug = f" bug={self.bug}" if self.bug else ""
        return f"{self.lab} seed={self.seed} [{'+'.join(self.rewrites) or 'none'}]{bug}"

    @property
    def lose(self) -> set[str]:
        """The grade_ids a fair teacher takes the points of: the planted bug's, or none."""
        return set(bugs(self.lab)[self.bug][2]) if self.bug else set()

    def notebook(self) -> dict:
        """The submission (raises NotApplicable where a rewrite has nothing to act on)."""
        nb = copy.deepcopy(_base(self.lab))
        forbidden = _forbidden(self.lab)
        for name in sorted(self.rewrites, key=list(REWRITES).index):
            ctx = Context(self.lab, random.Random(f"{self.lab}:{self.seed}:{name}"), forbidden)
            REWRITES[name](nb, ctx)
        if self.bug:
            function, source, _ = bugs(self.lab)[self.bug]
            nb = with_function(nb, function, source)
        return nb


@functools.cache
def _base(lab: str) -> dict:
    return completed_lab(lab)


@functools.cache
def _forbidden(lab: str) -> tuple[str, ...]:
    return tuple(sorted({name for item in load_spec(lab).autograded for name in item.forbid}))


@functools.cache
def applicable(lab: str) -> tuple[str, ...]:
    """The rewrites that have something to act on in this lab, each tried alone."""
    out = []
    for name in REWRITES:
        try:
            Variant(lab, 0, (name,)).notebook()
            out.append(name)
        except NotApplicable:
            pass
    return tuple(out)


def _draw(lab: str, seed: int, pool: list[str], low: int, high: int, bug: str | None = None) -> Variant:
    rng = random.Random(f"{lab}:{seed}:{bug}")
    while True:
        variant = Variant(lab, seed, tuple(rng.sample(pool, rng.randint(low, high))), bug)
        try:
            variant.notebook()
            return variant
        except NotApplicable:
            continue


def singles(lab: str) -> list[Variant]:
    """Each applicable rewrite alone."""
    return [Variant(lab, 0, (name,)) for name in applicable(lab)]


def combinations(lab: str, count: int, first_seed: int = 1, low: int = 2, high: int = 5) -> list[Variant]:
    """``count`` correct variants, each with ``low`` to ``high`` rewrites drawn by its seed."""
    return [_draw(lab, seed, list(applicable(lab)), low, high) for seed in range(first_seed, first_seed + count)]


def planted(lab: str, seed: int = 0, per_bug: int = 1, high: int = 2) -> list[Variant]:
    """Each classic bug of the lab planted in ``per_bug`` variants with 0 to ``high`` other rewrites."""
    pool = [n for n in applicable(lab) if n not in NOT_WITH_BUGS]
    return [_draw(lab, seed + i, pool, 0, high, bug) for bug in bugs(lab) for i in range(per_bug)]
