"""Scoring: the inputs and references of a lab's items, and the child's answers turned into item results.

Layer: grader side, above ``results`` and ``lab``; imports the standard library and, of the grader, ``spec``,
``compare``, ``analysis``, ``results`` and ``lab``. Every point is decided here, from values computed here; what
the child reports besides its values (errors, time-outs, tripped wires) is read only as feedback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import analysis
from .compare import compare, to_float64, to_leaves
from .lab import Lab
from .messages import INPUT_ANSWERED, MAGIC_SKIPPED, SHELL_SKIPPED, WORKER_FAILED
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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _failure(m: dict) -> str:
    """Why a case whose call raised failed, in words for the student."""
    err = str(m["error"])[:400]
    if m.get("slow"):
        why = (
            f"{m['slow'][:80]} ran past the time limit"
            if isinstance(m["slow"], str)
            else err.removeprefix("TimeLimit: ")
        )
        return f"your code ran past the time limit of one call (an endless loop?): {why}"
    if m.get("forbidden") or err.startswith("ForbiddenCall"):
        return "your code called a function this exercise forbids"
    if err.startswith("NotImplementedError"):
        return "not written yet (it still raises NotImplementedError)"
    if m.get("unreadable"):
        return f"your function returned something that is not a tensor or a number ({err})"
    return f"your function raised {err}"


def score(prepared: list[Prepared], msgs: list[dict], cells: list[str], trusted: set[str]) -> dict[str, ItemResult]:
    """Per item: points and the feedback lines. Decided here, from values computed here."""
    cases: dict[tuple[str, int], dict] = {}
    tripped: dict[str, set[str]] = {}
    escapes: list[str] = []  # what reached around the watchers at run time (the child's report)
    for m in msgs:
        if m.get("t") == "case" and isinstance(m.get("item"), str) and isinstance(m.get("case"), int):
            cases.setdefault((m["item"], m["case"]), m)  # the first answer counts; later copies are ignored
        elif m.get("t") == "forbidden" and isinstance(m.get("item"), str) and isinstance(m.get("name"), str):
            tripped.setdefault(m["item"], set()).add(m["name"][:80])
        elif m.get("t") == "escape" and isinstance(m.get("what"), str) and m["what"][:80] not in escapes:
            escapes.append(m["what"][:80])
    results = {}
    for p in prepared:
        item = p.item
        fails: list[tuple[str, str]] = []  # (which check, why), in order
        found = analysis.analyse(cells, item.function, item.forbid, trusted)
        for n, (case, exp) in enumerate(zip(p.cases, p.expected)):
            what = f"check {n + 1} ({case.label})" if case.label else f"check {n + 1}"
            answer = cases.get((item.grade_id, n))
            if answer is None:
                fails.append((what, "no result (the notebook stopped, timed out or crashed before this check)"))
                continue
            if "error" in answer:
                fails.append((what, _failure(answer)))
                continue
            try:
                got = decode_value(answer.get("out"))
            except (ValueError, TypeError, KeyError):
                fails.append((what, "the result could not be read"))
                continue
            msg = compare(got, exp, item.atol, item.rtol)
            if msg is None and item.check is not None:
                msg = item.check(case, got, exp)
            if msg:
                fails.append((what, msg))
        failed = len(fails)
        if failed > 1 and failed == len(p.cases) and len({why for _, why in fails}) == 1:
            lines = [f"every check: {fails[0][1]}"]  # one reason, said once
        else:
            lines = [f"{what}: {why}" for what, why in fails]
        # Only what ran costs a point: the source's names (``found``) merely add detail to a run-time finding.
        ran = tripped.get(item.grade_id, set())
        forbidden = sorted(ran | set(found.forbidden)) if ran else []
        escaped = sorted(set(escapes[:5]) | set(found.hatches)) if item.forbid and escapes else []
        cheat = []
        if found.missing and failed:  # the reason a call failed, never a loss by itself
            cheat.append(
                f"no definition of {item.function} was found in your notebook (define it with `def` or `class`)"
            )
        if forbidden:
            cheat.append(f"uses {', '.join(forbidden)}, which this exercise forbids (it would do the work for you)")
        if escaped:
            cheat.append(
                f"your notebook uses {', '.join(escaped)}, which can get around the grader's checks "
                "(write the code plainly)"
            )
        ok = failed == 0 and not cheat
        if ok:
            lines = [f"passed all {_plural(len(p.cases), 'check')}"]
        else:
            head = (
                f"failed {failed} of {_plural(len(p.cases), 'check')}"
                if failed
                else f"passed all {_plural(len(p.cases), 'check')}, but:"
            )
            lines = [head] + [f"0 points: {c}" for c in cheat] + lines
        results[item.grade_id] = ItemResult(float(item.points) if ok else 0.0, float(item.points), lines)
    return results


def _cell_no(msgs: list[dict], kind: str) -> int | None:
    """The code cell (1-based) named by the last message of ``kind`` (the child's own report, for feedback only)."""
    hits = [m["i"] for m in msgs if m.get("t") == kind and isinstance(m.get("i"), int) and 0 <= m["i"] < 100_000]
    return hits[-1] + 1 if hits else None


def slow_functions(msgs: list[dict]) -> list[str]:
    """'name (code cell N)' for each function of the student's that ran past its time limit."""
    out = []
    for m in msgs:
        if m.get("t") == "slow" and isinstance(m.get("function"), str):
            text = m["function"][:60] + (f" (code cell {m['cell']})" if isinstance(m.get("cell"), int) else "")
            if text not in out:
                out.append(text)
    return out[:10]


def _first_line(cells: list[str], n: int) -> str:
    """Code cell ``n`` (1-based) by its first line, quoted, for feedback."""
    src = cells[n - 1] if 0 < n <= len(cells) else ""
    line = next((x.strip() for x in src.splitlines() if x.strip()), "")
    return f"`{line[:57]}...`" if len(line) > 60 else f"`{line}`"


def status_of(header: dict, msgs: list[dict], cells: Sequence[str] = ()) -> tuple[str, str]:
    """The submission's status and the note that explains it, from the worker's header and the child's messages
    (``cells``: the notebook's code cells, to name a cell by its first line)."""
    state = header.get("state")
    sig = header.get("signal")
    stopped = _cell_no(msgs, "stopped")
    if stopped is not None:
        seconds = next((m.get("seconds") for m in msgs if m.get("t") == "stopped"), 0)
        seconds = f"{seconds:g}" if isinstance(seconds, (int, float)) else "?"
        return "timeout", (
            f"code cell {stopped} ({_first_line(list(cells), stopped)}) was still running at its time limit of "
            f"{seconds} s of CPU time (an endless loop?); the notebook stopped there"
        )
    if state == "timeout" or sig == 24:  # SIGXCPU: the CPU-time limit
        at = _cell_no(msgs, "at")
        where = (
            f" (it was running code cell {at})"
            if at is not None and not any(m.get("t") == "done" for m in msgs)
            else ""
        )
        return "timeout", f"the notebook was still running at the time limit{where} (an endless loop?)"
    if any(m.get("t") == "memory" for m in msgs):
        return "memory", "some code asked for more memory than a submission may use"
    if state == "output":
        return "crashed", "sent far more output than a notebook should"
    if state == "worker":
        return "crashed", WORKER_FAILED
    if not any(m.get("t") == "done" for m in msgs):
        how = f"killed by signal {sig}" if sig else f"exited with status {header.get('exit')}"
        return "crashed", f"the notebook's process ended early ({how})"
    slow = slow_functions(msgs)
    if slow:
        return "graded", (
            f"{', '.join(slow)} ran past the time limit of one call (an endless loop?) and was "
            "stopped; only the items that call it lost points"
        )
    return "graded", ""


def cell_errors(msgs: list[dict], own: list[bool]) -> list[str]:
    """The errors of the student's own cells (the lab's unchanged cells are not theirs to fix), for feedback."""
    return [
        f"code cell {m['i'] + 1}: {str(m.get('error'))[:300]}"
        for m in msgs
        if m.get("t") == "cell" and isinstance(m.get("i"), int) and 0 <= m["i"] < len(own) and own[m["i"]]
    ][:20]


def notes(msgs: list[dict]) -> list[str]:
    """What the grader did not run as Jupyter would have (shell commands, unknown magics, ``input()``), once each."""
    out: list[str] = []
    for m in msgs:
        if m.get("t") != "note" or not isinstance(m.get("i"), int) or not isinstance(m.get("text"), str):
            continue
        cell, text = m["i"] + 1, "`" + m["text"][:80].replace("`", "'") + "`"
        if m.get("kind") == "input":
            line = INPUT_ANSWERED.format(cell=cell)
        else:
            line = (SHELL_SKIPPED if m.get("kind") == "shell" else MAGIC_SKIPPED).format(cell=cell, command=text)
        if line not in out:
            out.append(line)
    return out[:10]
