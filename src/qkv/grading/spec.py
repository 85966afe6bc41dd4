"""The grading-spec format: the trusted tests of one lab, written next to the library.

A spec is a module ``qkv/grading/specs/<lab>.py`` that defines ``SPEC = LabSpec(...)``. It lists, in
the notebook's order, one :class:`Item` per autograded cell and one :class:`Manual` per written answer:

* ``grade_id`` and ``points`` must equal the solution notebook's nbgrader metadata (checked by ``qkv grade``);
* ``function`` is the name the student defines (a ``def`` or a ``class``); the sandbox looks it up in the
  namespace the submission's cells built;
* ``cases(g)`` draws the inputs from a ``torch.Generator`` seeded from the batch's recorded seed and the
  ``grade_id`` (so a rerun gives the same inputs) and returns a list of :class:`Case`;
* ``reference(*args, **kwargs)`` is the trusted answer, computed in the grader's own process (never in the
  sandbox) on float64 copies of the inputs, with the ``qkv`` library, PyTorch or a closed form;
* ``atol``/``rtol`` is the tolerance, ``forbid`` the dotted names of callables that would do the work.

How one item is graded: the sandbox runs the student's cells, then calls ``function(*case.args, **case.kwargs)``
(or ``call(function, *args, **kwargs)`` when the item gives a ``call``) for every case, with the stand-ins of
``helpers`` in place of the student's helpers that are wrong, and sends back plain arrays. The grader compares them with ``reference`` leaf by leaf (same nesting, same shapes, values within
``atol + rtol * |expected|``, NaN/inf only where the reference has them), then runs ``check`` if given.
The item earns its points when every case matches and no graded call executed a forbidden callable; otherwise 0, like an
nbgrader test cell (``compare.py`` compares, ``scoring.py`` scores). See ``specs/README.md`` for a walk-through.

Layer: grader side, above ``messages`` (a check's message); imports torch, the standard library and ``messages``;
``specs/<lab>.py`` import it (adding a lab's spec is copying one file there).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .messages import Msg

__all__ = [
    "COSINE_FAMILY",
    "QKV_ATTENTION",
    "SOFTMAX_FAMILY",
    "TORCH_ATTENTION",
    "Case",
    "Item",
    "LabSpec",
    "Manual",
    "item_generator",
    "load_spec",
    "randn",
]

# Callables that compute a softmax for the student (any route that PyTorch documents, and the library's).
SOFTMAX_FAMILY: tuple[str, ...] = (
    "torch.softmax",
    "torch.nn.functional.softmax",
    "torch.Tensor.softmax",
    "torch.special.softmax",
    "torch.nn.Softmax",
    "torch._softmax",
    "torch.log_softmax",
    "torch.nn.functional.log_softmax",
    "torch.Tensor.log_softmax",
    "torch.special.log_softmax",
    "torch.nn.LogSoftmax",
    "torch.softmin",
    "torch.nn.functional.softmin",
    "torch.nn.Softmin",
    "torch.nn.functional.gumbel_softmax",
    "qkv.softmax",
)
COSINE_FAMILY: tuple[str, ...] = (
    "torch.cosine_similarity",
    "torch.nn.functional.cosine_similarity",
    "torch.nn.CosineSimilarity",
)
QKV_ATTENTION: tuple[str, ...] = (
    "qkv.scaled_dot_product_attention",
    "qkv.column_attention",
    "qkv.chunked_attention",
    "qkv.MultiHeadAttention",
)
TORCH_ATTENTION: tuple[str, ...] = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
)


@dataclass(frozen=True)
class Case:
    """One call of the student's function. ``label`` is shown to the student: say what is checked, not the values."""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    label: str = ""


@dataclass(frozen=True)
class Item:
    """One autograded cell of the notebook, graded all-or-nothing like nbgrader's test cell."""

    grade_id: str
    points: float
    function: str
    cases: Callable[[torch.Generator], list[Case]]
    reference: Callable[..., Any]
    atol: float = 1e-5
    rtol: float = 1e-4
    forbid: tuple[str, ...] = ()
    # Optional: call(student_object, *args, **kwargs) -> outputs, run inside the sandbox instead of
    # student_object(*args, **kwargs). A plain top-level function of the spec module that imports what it
    # needs inside its body: its source is sent to the sandbox.
    call: Callable[..., Any] | None = None
    # Optional: check(case, got, expected) -> None or a message for the student; runs in the grader after the
    # value comparison passed, on float64 numpy leaves (got and expected have the same nesting).
    check: Callable[[Case, Any, Any], Msg | None] | None = None
    # One sentence for the student's feedback: what this item tests.
    describe: str = ""
    # Name used in feedback (default: the function's name).
    title: str = ""
    # Optional: correct versions of other exercises' functions this one may call, each a top-level function of the
    # spec module named like the student's (imports inside its body: its source is sent to the sandbox). The
    # student's own helper is kept when it passes the cases of the item that grades it; only a wrong one is
    # replaced, for this item's calls, by the stand-in (which accepts extra optional arguments): one bug, one item.
    helpers: tuple[Callable[..., Any], ...] = ()

    def call_source(self) -> str | None:
        """The source of ``call`` as the sandbox runs it (``None``: call the student's object directly)."""
        return None if self.call is None else _source(self.call)

    def helper_sources(self) -> dict[str, str]:
        """The stand-ins as the sandbox runs them: the student's function name -> its correct version's source."""
        return {h.__name__: _source(h) for h in self.helpers}


def _source(function: Callable[..., Any]) -> str:
    return textwrap.dedent(inspect.getsource(function))


@dataclass(frozen=True)
class Manual:
    """A written answer graded by hand: listed for the instructor, counted only once a score is entered."""

    grade_id: str
    points: float
    title: str = ""


@dataclass(frozen=True)
class LabSpec:
    lab: str
    items: tuple[Item | Manual, ...]

    @property
    def autograded(self) -> list[Item]:
        return [i for i in self.items if isinstance(i, Item)]

    @property
    def manual(self) -> list[Manual]:
        return [i for i in self.items if isinstance(i, Manual)]

    @property
    def max_auto(self) -> float:
        return float(sum(i.points for i in self.autograded))

    def item(self, grade_id: str) -> Item | Manual:
        for i in self.items:
            if i.grade_id == grade_id:
                return i
        raise KeyError(grade_id)


def load_spec(lab: str) -> LabSpec:
    """Import ``qkv.grading.specs.<lab>`` and return its ``SPEC``; a clear ``LookupError`` when there is none."""
    if not lab.isidentifier():
        raise LookupError(f"{lab!r} is not a lab id (expected a name like soft_lookup)")
    try:
        module = importlib.import_module(f"qkv.grading.specs.{lab}")
    except ModuleNotFoundError as err:
        if err.name != f"qkv.grading.specs.{lab}":
            raise
        raise LookupError(f"no grading spec for lab {lab!r}: expected src/qkv/grading/specs/{lab}.py") from None
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, LabSpec) or spec.lab != lab:
        raise LookupError(f"qkv/grading/specs/{lab}.py must define SPEC = LabSpec(lab={lab!r}, ...)")
    return spec


def item_generator(seed: int, grade_id: str) -> torch.Generator:
    """The generator an item's ``cases`` draw from: one recorded batch seed, one stream per item."""
    digest = hashlib.sha256(f"{seed}:{grade_id}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


def randn(g: torch.Generator, *shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal draws of ``shape`` (times ``scale``) from ``g``."""
    return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)


def draw_seed(g: torch.Generator) -> int:
    """A seed for a case drawn from ``g`` (the student's code seeds its own generator with it)."""
    return int(torch.randint(0, 2**31 - 1, (1,), generator=g))
