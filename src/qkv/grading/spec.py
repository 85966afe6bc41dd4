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
(or ``call(function, *args, **kwargs)`` when the item gives a ``call``) for every case and sends back plain
arrays. The grader compares them with ``reference`` leaf by leaf (same nesting, same shapes, values within
``atol + rtol * |expected|``, NaN/inf only where the reference has them), then runs ``check`` if given.
The item earns its points when every case matches and no forbidden callable was used; otherwise 0, like an
nbgrader test cell. See ``specs/README.md`` for a walk-through.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "COSINE_FAMILY",
    "QKV_ATTENTION",
    "SOFTMAX_FAMILY",
    "TORCH_ATTENTION",
    "Case",
    "Item",
    "LabSpec",
    "Manual",
    "compare",
    "item_generator",
    "load_spec",
    "randn",
    "to_float64",
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
    check: Callable[[Case, Any, Any], str | None] | None = None
    # One sentence for the student's feedback: what this item tests.
    describe: str = ""
    # Name used in feedback (default: the function's name).
    title: str = ""

    def call_source(self) -> str | None:
        """The source of ``call`` as the sandbox runs it (``None``: call the student's object directly)."""
        if self.call is None:
            return None
        return textwrap.dedent(inspect.getsource(self.call))


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


def source_digest(folder: Path) -> str:
    """SHA-256 over the paths and bytes of every ``.py`` file below ``folder``."""
    h = hashlib.sha256()
    for source in sorted(Path(folder).rglob("*.py")):
        h.update(source.relative_to(folder).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return h.hexdigest()


def spec_fingerprint(lab: str) -> str:
    """SHA-256 of everything besides the submission and the seed that decides a grade: the lab's spec, the shared
    contracts, the comparison and grading code, and the library the references call (every source file of the
    installed ``qkv``), with the versions of ``qkv`` and torch. Cached results from any other version are not reused."""
    import qkv

    importlib.import_module(f"qkv.grading.specs.{lab}")  # an unknown lab fails here, as before
    parts = (lab, qkv.__version__, torch.__version__, source_digest(Path(qkv.__file__).parent))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def item_generator(seed: int, grade_id: str) -> torch.Generator:
    """The generator an item's ``cases`` draw from: one recorded batch seed, one stream per item."""
    digest = hashlib.sha256(f"{seed}:{grade_id}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))


def randn(g: torch.Generator, *shape: int, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal draws of ``shape`` (times ``scale``) from ``g``."""
    return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)


def to_float64(x: Any) -> Any:
    """Floating tensors (nested in tuples, lists, dicts) copied to float64; everything else unchanged."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).clone() if x.is_floating_point() else x.clone()
    if isinstance(x, (tuple, list)):
        return type(x)(to_float64(v) for v in x)
    if isinstance(x, dict):
        return {k: to_float64(v) for k, v in x.items()}
    return x


def to_leaves(x: Any) -> Any:
    """The reference's output as nested lists of float64 numpy arrays (the form the sandbox sends back)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    if isinstance(x, (bool, int, float)):
        return np.asarray(float(x))
    if isinstance(x, (tuple, list)):
        return [to_leaves(v) for v in x]
    raise TypeError(f"a reference must return tensors, numbers or tuples of them; got {type(x).__name__}")


def _shape(a: np.ndarray) -> str:
    return "(" + ", ".join(str(n) for n in a.shape) + ("," if a.ndim == 1 else "") + ")"


def compare(got: Any, expected: Any, atol: float, rtol: float, where: str = "the result") -> str | None:
    """None when ``got`` matches ``expected`` (nested lists of float64 arrays), else a message for the student."""
    if isinstance(expected, list):
        if not isinstance(got, list):
            return f"{where} should be a tuple of {len(expected)} values; got a single value"
        if len(got) != len(expected):
            return f"{where} should be a tuple of {len(expected)} values; got {len(got)}"
        for n, (g, e) in enumerate(zip(got, expected)):
            msg = compare(g, e, atol, rtol, f"value {n + 1} of {where}")
            if msg:
                return msg
        return None
    if isinstance(got, list):
        return f"{where} should be a single tensor; got a tuple of {len(got)} values"
    if not isinstance(got, np.ndarray):
        return f"{where} is not a tensor or a number"
    if got.shape != expected.shape:
        return f"{where} has shape {_shape(got)}; expected {_shape(expected)}"
    fin_e, fin_g = np.isfinite(expected), np.isfinite(got)
    if (fin_e & ~fin_g).any():
        return f"{where} contains NaN or inf where the correct answer is finite (overflow? division by zero?)"
    bad = ~np.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if bad.any():
        worst = float(np.nanmax(np.abs(np.where(bad, got - expected, 0.0))))
        return f"{where} is wrong in {int(bad.sum())} of {bad.size} entries (largest error {worst:.3g})"
    return None


def is_close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
