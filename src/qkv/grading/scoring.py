"""Scoring: the inputs and references of a lab's items, and the child's answers turned into item results.

Layer: grader side, above ``results`` and ``lab``; imports the standard library and, of the grader, ``events``,
``spec``, ``compare``, ``analysis``, ``results`` and ``lab``. Every point is decided here, from values computed here;
what the child reports besides its values (errors, time-outs, tripped wires) is read only as feedback. Its messages
arrive checked (``events.parse``): types and bounds are taken as given here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import analysis
from .compare import compare, to_float64, to_leaves
from .events import At, Case, CellError, Done, Escape, Forbidden, Message, Note, OutOfMemory, Slow, SlowCall, Stopped
from .jobs import Header
from .lab import Lab
from .messages import (
    CALL_TOO_SLOW,
    CALLED_FORBIDDEN,
    CELL_ERROR,
    CELL_STOPPED,
    CHECK,
    CHECK_FAILED,
    CHECK_LABELLED,
    CHECKS,
    CHILD_SAYS,
    EVERY_CHECK,
    EXITED,
    FAILED_SOME,
    FUNCTION_IN_CELL,
    INPUT_ANSWERED,
    KILLED,
    MAGIC_SKIPPED,
    NO_DEFINITION,
    NO_RESULT,
    NOT_A_TENSOR_RETURNED,
    NOT_WRITTEN,
    NOTE_AND_NOTE,
    ONE_CHECK,
    OUT_OF_MEMORY,
    PASSED_ALL,
    PASSED_ALL_BUT,
    RAISED,
    RAN_PAST,
    SHELL_SKIPPED,
    SLOW_STOPPED,
    STILL_RUNNING,
    STILL_RUNNING_AT,
    TOO_MUCH_OUTPUT,
    UNREADABLE_RESULT,
    USES_FORBIDDEN,
    USES_HATCHES,
    WORKER_FAILED,
    ZERO_POINTS,
    Known,
    Msg,
    Param,
)
from .results import ItemResult, decode_value
from .spec import Item, item_generator


@dataclass
class Prepared:
    item: Item
    cases: list
    expected: list


def prepare(lab: Lab, seed: int) -> list[Prepared]:
    """Each autograded item's cases, drawn from ``seed``, and the reference's answers (float64, computed here)."""
    out = []
    for item in lab.spec.autograded:
        cases = item.cases(item_generator(seed, item.grade_id))
        expected = [to_leaves(item.reference(*to_float64(c.args), **to_float64(c.kwargs))) for c in cases]
        out.append(Prepared(item, cases, expected))
    return out


def _checks(n: int) -> Msg:
    return ONE_CHECK(n=n) if n == 1 else CHECKS(n=n)


def _function(where: Slow | SlowCall, cut: int = 60) -> Param:
    """A function of the student's, with its code cell where known (its name cut to ``cut`` characters)."""
    text = where.function[:cut]
    return FUNCTION_IN_CELL(function=text, cell=where.cell) if where.cell else text


def _said(m: Case) -> Msg | None:
    """The message an exception of ours carried (a retired function's, a broken contract's), checked."""
    try:
        return Msg.from_json(m.said, CHILD_SAYS) if m.said is not None else None
    except ValueError:
        return None


def _failure(m: Case, err: str) -> Msg:
    """Why a case whose call raised ``err`` failed, in words for the student."""
    said = _said(m)
    if m.slow:
        if isinstance(m.slow, SlowCall):
            why: Param = RAN_PAST(functions=(_function(m.slow, 80),))
        else:
            why = said or err.removeprefix("TimeLimit: ")
        return CALL_TOO_SLOW(why=why)
    if m.forbidden or err.startswith("ForbiddenCall"):
        return CALLED_FORBIDDEN()
    if err.startswith("NotImplementedError"):
        return NOT_WRITTEN()
    if m.unreadable:
        return NOT_A_TENSOR_RETURNED(error=err)
    return RAISED(error=said or err)


def score(prepared: list[Prepared], msgs: list[Message], cells: list[str], trusted: set[str]) -> dict[str, ItemResult]:
    """Per item: points and the feedback lines. Decided here, from values computed here."""
    cases: dict[tuple[str, int], Case] = {}
    tripped: dict[str, set[str]] = {}
    escapes: list[str] = []  # what reached around the watchers at run time (the child's report)
    for m in msgs:
        if isinstance(m, Case):
            cases.setdefault((m.item, m.case), m)  # the first answer counts; later copies are ignored
        elif isinstance(m, Forbidden) and m.item is not None:
            tripped.setdefault(m.item, set()).add(m.name)
        elif isinstance(m, Escape) and m.what not in escapes:
            escapes.append(m.what)
    results = {}
    for p in prepared:
        item = p.item
        fails: list[tuple[Msg, Msg]] = []  # (which check, why), in order
        found = analysis.analyse(cells, item.function, item.forbid, trusted)
        for n, (case, exp) in enumerate(zip(p.cases, p.expected)):
            what = CHECK_LABELLED(n=n + 1, label=Known(case.label)) if case.label else CHECK(n=n + 1)
            answer = cases.get((item.grade_id, n))
            if answer is None:
                fails.append((what, NO_RESULT()))
                continue
            if answer.error is not None:
                fails.append((what, _failure(answer, answer.error)))
                continue
            try:
                got = decode_value(answer.out)
            except (ValueError, TypeError, KeyError):
                fails.append((what, UNREADABLE_RESULT()))
                continue
            msg = compare(got, exp, item.atol, item.rtol)
            if msg is None and item.check is not None:
                msg = item.check(case, got, exp)
            if msg:
                fails.append((what, msg))
        failed = len(fails)
        if failed > 1 and failed == len(p.cases) and len({why for _, why in fails}) == 1:
            lines = [EVERY_CHECK(why=fails[0][1])]  # one reason, said once
        else:
            lines = [CHECK_FAILED(what=what, why=why) for what, why in fails]
        # Only what ran costs a point: the source's names (``found``) merely add detail to a run-time finding.
        ran = tripped.get(item.grade_id, set())
        forbidden = sorted(ran | set(found.forbidden)) if ran else []
        escaped = sorted(set(escapes[:5]) | set(found.hatches)) if item.forbid and escapes else []
        cheat = []
        if found.missing and failed:  # the reason a call failed, never a loss by itself
            cheat.append(NO_DEFINITION(function=item.function))
        if forbidden:
            cheat.append(USES_FORBIDDEN(names=", ".join(forbidden)))  # code names, as they are
        if escaped:
            cheat.append(USES_HATCHES(names=", ".join(escaped)))
        ok = failed == 0 and not cheat
        checks = _checks(len(p.cases))
        if ok:
            lines = [PASSED_ALL(checks=checks)]
        else:
            head = FAILED_SOME(failed=failed, checks=checks) if failed else PASSED_ALL_BUT(checks=checks)
            lines = [head] + [ZERO_POINTS(reason=c) for c in cheat] + lines
        results[item.grade_id] = ItemResult(float(item.points) if ok else 0.0, float(item.points), lines)
    return results


def _cell_no(msgs: list[Message], kind: type[At | Stopped]) -> int | None:
    """The code cell (1-based) named by the last message of ``kind`` (the child's own report, for feedback only)."""
    hits = [m.i for m in msgs if isinstance(m, kind)]
    return hits[-1] + 1 if hits else None


def slow_functions(msgs: list[Message]) -> tuple[Param, ...]:
    """Each function of the student's that ran past its time limit, with its code cell where known."""
    out: list[Param] = []
    for m in msgs:
        if isinstance(m, Slow):
            found = _function(m)
            if found not in out:
                out.append(found)
    return tuple(out[:10])


def _first_line(cells: list[str], n: int) -> str:
    """Code cell ``n`` (1-based) by its first line, quoted, for feedback."""
    src = cells[n - 1] if 0 < n <= len(cells) else ""
    line = next((x.strip() for x in src.splitlines() if x.strip()), "")
    return f"`{line[:57]}...`" if len(line) > 60 else f"`{line}`"


def status_of(header: Header, msgs: list[Message], cells: Sequence[str] = ()) -> tuple[str, Msg | None]:
    """The submission's status and the note that explains it, from the worker's header and the child's messages
    (``cells``: the notebook's code cells, to name a cell by its first line)."""
    state, sig = header.state, header.signal
    done = any(isinstance(m, Done) for m in msgs)
    stopped = _cell_no(msgs, Stopped)
    if stopped is not None:
        seconds = next(m.seconds for m in msgs if isinstance(m, Stopped))  # the first report's
        return "timeout", CELL_STOPPED(cell=stopped, line=_first_line(list(cells), stopped), seconds=seconds)
    if state == "timeout" or sig == 24:  # SIGXCPU: the CPU-time limit
        at = _cell_no(msgs, At)
        if at is not None and not done:
            return "timeout", STILL_RUNNING_AT(cell=at)
        return "timeout", STILL_RUNNING()
    if any(isinstance(m, OutOfMemory) for m in msgs):
        return "memory", OUT_OF_MEMORY()
    if state == "output":
        return "crashed", TOO_MUCH_OUTPUT()
    if state == "worker":
        return "crashed", WORKER_FAILED()
    if not done:
        return "crashed", KILLED(signal=str(sig)) if sig else EXITED(code=str(header.exit))
    slow = slow_functions(msgs)
    if slow:
        return "graded", SLOW_STOPPED(functions=slow)
    return "graded", None


def cell_errors(msgs: list[Message], own: list[bool]) -> list[Msg]:
    """The errors of the student's own cells (the lab's unchanged cells are not theirs to fix), for feedback (each
    cut to 300 characters, twenty at most)."""
    return [
        CELL_ERROR(cell=m.i + 1, error=m.error[:300])
        for m in msgs
        if isinstance(m, CellError) and m.i < len(own) and own[m.i]
    ][:20]


def notes(msgs: list[Message]) -> list[Msg]:
    """What the grader did not run as Jupyter would have (shell commands, unknown magics, ``input()``), once each."""
    out: list[Msg] = []
    for m in msgs:
        if not isinstance(m, Note):
            continue
        cell, text = m.i + 1, "`" + m.text.replace("`", "'") + "`"
        if m.kind == "input":
            line = INPUT_ANSWERED(cell=cell)
        else:
            line = (SHELL_SKIPPED if m.kind == "shell" else MAGIC_SKIPPED)(cell=cell, command=text)
        if line not in out:
            out.append(line)
    return out[:10]


def joined(first: Msg | None, more: list[Msg]) -> Msg | None:
    """Notes said one after the other (``a; b; c``)."""
    for why in more:
        first = why if first is None else NOTE_AND_NOTE(note=first, why=why)
    return first
