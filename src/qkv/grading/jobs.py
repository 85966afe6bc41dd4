"""What crosses the sandbox: a worker's configuration, a job and its limits, and the header that says how it ended.

Layer: the bottom of both sides, beside ``protocol`` (it runs inside the sandbox too, so it imports only the standard
library). Each is a dataclass, defined here once for both ends. The wire carries plain data (the worker cannot
unpickle the grader's classes, nor the grader trust anything but JSON from the sandbox): each end builds its side's
object with ``from_wire`` and sends ``to_wire()``, so a missing or misspelled field is an error at once.

  grader -> worker: a :class:`WorkerConfig` once, then one :class:`Job` per submission (pickled plain data)
  worker -> grader: :class:`Ready` once, then one :class:`Header` per job (JSON), followed by the child's bytes

The child's bytes are its messages to the grader, one frame each: their types live in ``events``, beside this module
and below ``protocol``, which reads them back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self

CALL_SHARE = 8  # by default, one graded call may use 1/CALL_SHARE of the time limit in CPU seconds
CELL_CALLS = 4  # and one cell CELL_CALLS times a call's share: an explore cell that trains is no endless loop


def _shallow(obj: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, values untouched (``asdict`` would deep-copy a case's tensors)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


class _Wire:
    """The plain-data form of a dataclass whose fields are plain data already."""

    def to_wire(self) -> dict[str, Any]:
        return _shallow(self)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Self:
        return cls(**data)


@dataclass(frozen=True)
class Limits:
    """One submission's limits. :meth:`of` derives the CPU limits from the wall clock; :data:`GRADE` and
    :data:`GRADESCOPE` are the commands' defaults. A job written by hand may leave the CPU limits out: then there
    are none."""

    timeout: float  # wall-clock seconds for the whole notebook (the worker's deadline; CPU time: timeout + 1)
    memory_mb: int  # MB of address space for the submission's own code, above the worker's own size
    call_timeout: float = 0.0  # CPU seconds of one graded call, or of one call a cell makes (0: no limit)
    cell_timeout: float = 0.0  # CPU seconds of one cell in all (0: no limit)

    @classmethod
    def of(cls, timeout: float, memory_mb: int, call_timeout: float | None = None) -> Limits:
        """``call_timeout`` by default (None or 0) ``timeout / CALL_SHARE``; a cell ``CELL_CALLS`` times that."""
        call = call_timeout or timeout / CALL_SHARE
        return cls(timeout, memory_mb, call, call * CELL_CALLS)


GRADE = Limits.of(120.0, 4096)  # `qkv grade` and `qkv check`
GRADESCOPE = Limits.of(300.0, 512)  # the Gradescope bundle: with the kernel's measured peak, fits a 1.5 GB container


@dataclass(frozen=True)
class JobItem:
    """One autograded item as the child runs it: the student's function, the spec's call and stand-ins (sources,
    compiled inside), the calls it forbids, and its cases (``(args, kwargs)`` each)."""

    grade_id: str
    function: str
    forbid: list[str] = field(default_factory=list)
    call: str | None = None  # the source of the spec's call, or None: call the student's function directly
    call_name: str | None = None  # the name that source defines
    helpers: dict[str, str] = field(default_factory=dict)  # the student's function name -> its stand-in's source
    atol: float = 1e-5
    rtol: float = 1e-4
    cases: list[tuple[tuple, dict]] = field(default_factory=list)


@dataclass(frozen=True)
class Job(_Wire):
    """One submission for a worker: its code cells (Python already), the cells whose code is the course's own,
    its limits and its items. ``cwd``: the child's working folder, set by the worker."""

    cells: list[str]
    limits: Limits
    items: list[JobItem] = field(default_factory=list)
    course: list[int] = field(default_factory=list)  # indexes of the cells that keep the course's rights
    cwd: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {**_shallow(self), "limits": asdict(self.limits), "items": [_shallow(i) for i in self.items]}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Job:
        items = [JobItem(**item) for item in data.get("items", [])]
        return cls(**{**data, "limits": Limits(**data["limits"]), "items": items})


@dataclass(frozen=True)
class WorkerConfig(_Wire):
    """A worker's settings for all its jobs: the children's uid (``drop``: switch to it; the grader runs as root),
    the bytes of a child's output read at most, the modules imported once, how leftovers are killed
    (``namespace``, ``uid`` or ``group``) and the folder the children's working folders go in."""

    uid: int
    drop: bool
    max_bytes: int
    preload: list[str]
    kill: str
    tmp: str | None


@dataclass(frozen=True)
class Ready(_Wire):
    """The worker's first answer: it has imported what it preloads and waits for jobs."""

    pid: int
    uid: int


@dataclass(frozen=True)
class Header(_Wire):
    """How one job ended: ``state`` ``exited``, ``timeout`` (the wall clock), ``output`` (too many bytes) or
    ``worker`` (the worker died or hung: ``error`` says how); the child's signal or exit status; its seconds; the
    bytes it wrote."""

    state: str
    signal: int | None = None
    exit: int | None = None
    wall: float = 0.0
    bytes: int = 0
    error: str | None = None
