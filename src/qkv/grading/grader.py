"""``qkv grade``: find the submissions, grade each in the sandbox against the lab's spec, resume, report.

Nothing a submission contains is trusted: its metadata is ignored (cells are taken in order, by type), its
bytes are parsed as JSON only, and what its sandboxed child sends back is validated and compared here with
the reference computed here. Results are cached per student and submission hash, so an interrupted batch
resumes; every file is written atomically.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import struct
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import analysis, sandbox
from .messages import LANGUAGES
from .spec import Item, LabSpec, compare, item_generator, load_spec, spec_fingerprint, to_float64, to_leaves

MAX_NOTEBOOK = 64 << 20  # bytes; larger files are "malformed" without being parsed
MAX_LEAF = 4_000_000
WORKER_FAILED = "the grader's worker failed while running this notebook (not the student's doing; run again)"
STATUSES = ("graded", "malformed", "timeout", "memory", "crashed", "ambiguous", "duplicate", "wrong_lab")
CALL_SHARE = 8  # by default, one cell or one graded call may use 1/CALL_SHARE of the time limit in CPU seconds


class GradeError(Exception):
    """An instructor's mistake (unknown lab, missing folder): the message says what to do."""


# ------------------------------------------------------------------------------------------- the lab
@dataclass
class Lab:
    lab: str
    spec: LabSpec
    order: list[str]  # grade_ids in notebook order
    prompts: dict[str, str]  # manual grade_id -> the question's markdown (the cell before the answer)
    locked: set[str]  # sources of the lab's locked cells (to find where a written answer ends)
    solution: Path
    released: set[str]  # sources (stripped) of the released lab's cells: what a student did not write
    others: dict[str, set[str]]  # the other labs' released cells (to recognise a notebook of another lab)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


def load_lab(lab: str, course: Path) -> Lab:
    """The lab's spec, checked against the solution notebook's nbgrader metadata (trusted: it is ours)."""
    course = Path(course)
    solution = course / "solutions" / lab / f"{lab}.ipynb"
    if not solution.is_file():
        known = (
            sorted(p.name for p in (course / "solutions").glob("*") if p.is_dir())
            if (course / "solutions").is_dir()
            else []
        )
        raise GradeError(
            f"unknown lab {lab!r}: no {solution} (labs here: {', '.join(known) or 'none'}; --course sets the course folder)"
        )
    try:
        spec = load_spec(lab)
    except LookupError as err:
        raise GradeError(str(err)) from None
    nb = json.loads(solution.read_text(encoding="utf-8"))
    order, locked, points = [], set(), {}
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            order.append(meta["grade_id"])
            points[meta["grade_id"]] = float(meta.get("points", 0))
        if meta.get("locked"):
            locked.add(_source(cell).strip())
    spec_ids = [i.grade_id for i in spec.items]
    if sorted(spec_ids) != sorted(order):
        raise GradeError(f"the spec of {lab} grades {spec_ids} but the notebook's graded cells are {order}")
    for i in spec.items:
        if float(i.points) != points[i.grade_id]:
            raise GradeError(
                f"{lab}: {i.grade_id} is worth {points[i.grade_id]} points in the notebook, {i.points} in the spec"
            )
    released = _released_cells(course, lab) or locked
    others = {other: cells for other in _lab_ids(course) if other != lab and (cells := _released_cells(course, other))}
    return Lab(lab, spec, order, questions(nb), locked, solution, released, others)


def questions(nb: dict) -> dict[str, str]:
    """Each written answer's question: grade_id -> the Markdown of the cell before the answer cell."""
    found, prev = {}, ""
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell.get("cell_type") == "markdown":
            found[meta["grade_id"]] = prev
        prev = _source(cell)
    return found


def _lab_ids(course: Path) -> list[str]:
    folder = course / "labs"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _released_cells(course: Path, lab: str) -> set[str]:
    """The stripped, non-empty sources of the released lab ``labs/<lab>/<lab>.ipynb`` (empty if there is none)."""
    path = course / "labs" / lab / f"{lab}.ipynb"
    if not path.is_file():
        return set()
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {src for cell in nb.get("cells", []) if (src := _source(cell).strip())}


def looks_like(cells: list[dict], lab: Lab) -> str | None:
    """The other lab a notebook is a copy of, or None: most of its cells come from another lab's release and
    almost none from this one's."""
    sources = {c["source"].strip() for c in cells if c["source"].strip()}
    if not sources:
        return None
    mine = len(sources & lab.released)
    best, hits = None, 0
    for other, released in lab.others.items():
        n = len(sources & released)
        if n > hits:
            best, hits = other, n
    if best is not None and hits >= 5 and hits >= 4 * mine and hits >= 0.3 * len(lab.others[best]):
        return best
    return None


# ------------------------------------------------------------------------------------ the submissions
@dataclass
class Entry:
    student: str
    path: Path | None
    status: str | None = None  # set when it cannot be graded at all
    note: str = ""


def _notebooks(folder: Path) -> list[Path]:
    found = []
    for p in sorted(folder.rglob("*.ipynb")):
        rel = p.relative_to(folder).parts
        if any(part.startswith(".") for part in rel) or not p.is_file():
            continue
        found.append(p)
    return found


def discover(root: Path, lab: str) -> list[Entry]:
    """One entry per student: ``<student>.ipynb`` or a folder ``<student>/`` (hidden names skipped)."""
    root = Path(root)
    if not root.is_dir():
        raise GradeError(f"submissions folder not found: {root}")
    files: dict[str, Path] = {}
    dirs: dict[str, Path] = {}
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir() and not p.is_symlink():
            dirs[p.name] = p
        elif p.suffix == ".ipynb":
            files[p.stem] = p
    entries = []
    for student in sorted(set(files) | set(dirs)):
        if student in files and student in dirs:
            entries.append(
                Entry(student, None, "duplicate", f"both {student}.ipynb and a folder {student}/ were submitted")
            )
            continue
        if student in files:
            p = files[student]
            if p.is_symlink() or not p.is_file():
                entries.append(Entry(student, None, "malformed", "the submission is not a regular file"))
            else:
                entries.append(Entry(student, p))
            continue
        nbs = _notebooks(dirs[student])
        named = [p for p in nbs if p.name == f"{lab}.ipynb"]
        if len(nbs) == 1:
            entries.append(Entry(student, nbs[0]))
        elif len(named) == 1:
            entries.append(Entry(student, named[0]))
        elif not nbs:
            entries.append(Entry(student, None, "malformed", "no notebook (.ipynb) in the submission folder"))
        else:
            entries.append(
                Entry(student, None, "ambiguous", f"{len(nbs)} notebooks and no single {lab}.ipynb among them")
            )
    return entries


def parse_notebook(data: bytes) -> list[dict]:
    """The cells of a notebook as ``{"type", "source"}``; raises ValueError for anything that is not one."""
    if not data.strip():
        raise ValueError("the file is empty")
    if len(data) > MAX_NOTEBOOK:
        raise ValueError(f"the file is {len(data) >> 20} MB, too large for a notebook")
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise ValueError(f"not a notebook (invalid JSON: {str(err)[:120]})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a notebook (no list of cells; nbformat 4 is expected)")
    cells = []
    for cell in nb["cells"]:
        if isinstance(cell, dict) and cell.get("cell_type") in ("code", "markdown", "raw"):
            cells.append({"type": cell["cell_type"], "source": _source(cell), "meta": cell.get("metadata")})
    return cells


def written_answer(cells: list[dict], lab: Lab, grade_id: str) -> str | None:
    """The student's answer to a written question: the markdown after the question's own text."""
    prompt = " ".join(lab.prompts.get(grade_id, "").split())
    for n, cell in enumerate(cells):
        if prompt and cell["type"] == "markdown" and " ".join(cell["source"].split()) == prompt:
            parts = []
            for nxt in cells[n + 1 :]:
                if nxt["type"] != "markdown" or nxt["source"].strip() in lab.locked:
                    break
                parts.append(nxt["source"])
            return "\n\n".join(parts)
    for cell in cells:  # metadata is used only to display an answer, never to score
        meta = cell.get("meta")
        nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
        if isinstance(nbg, dict) and nbg.get("grade_id") == grade_id and cell["type"] == "markdown":
            return cell["source"]
    return None


# ------------------------------------------------------------------------------------------ grading
@dataclass
class Prepared:
    item: Item
    cases: list
    expected: list


def prepare(lab: Lab, seed: int) -> list[Prepared]:
    out = []
    for item in lab.spec.autograded:
        cases = item.cases(item_generator(seed, item.grade_id))
        expected = [to_leaves(item.reference(*to_float64(c.args), **to_float64(c.kwargs))) for c in cases]
        out.append(Prepared(item, cases, expected))
    return out


def _decode(obj, depth: int = 0):
    if depth > 4 or not isinstance(obj, dict):
        raise ValueError("bad value")
    if "list" in obj:
        if not isinstance(obj["list"], list) or len(obj["list"]) > 16:
            raise ValueError("bad list")
        return [_decode(v, depth + 1) for v in obj["list"]]
    shape = obj.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 8
        or not all(isinstance(n, int) and 0 <= n <= MAX_LEAF for n in shape)
    ):
        raise ValueError("bad shape")
    size = int(np.prod(shape)) if shape else 1
    data = obj.get("data")
    if size > MAX_LEAF or not isinstance(data, str) or len(data) > 4 * (8 * size + 2) // 3 + 8:
        raise ValueError("bad data")
    raw = base64.b64decode(data, validate=True)
    if len(raw) != 8 * size:
        raise ValueError("bad data length")
    return np.frombuffer(raw, dtype="<f8").astype(np.float64).reshape(shape)


def read_messages(raw: bytes) -> list[dict]:
    msgs, pos = [], 0
    while pos + 4 <= len(raw) and len(msgs) < 100_000:
        (n,) = struct.unpack(">I", raw[pos : pos + 4])
        body = raw[pos + 4 : pos + 4 + n]
        pos += 4 + n
        if len(body) < n:
            break
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if isinstance(msg, dict):
            msgs.append(msg)
    return msgs


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def score(prepared: list[Prepared], msgs: list[dict], cells: list[str], trusted: set[str]) -> dict[str, dict]:
    """Per item: points and the feedback lines. Decided here, from values computed here."""
    cases: dict[tuple[str, int], dict] = {}
    tripped: dict[str, set[str]] = {}
    for m in msgs:
        if m.get("t") == "case" and isinstance(m.get("item"), str) and isinstance(m.get("case"), int):
            cases.setdefault((m["item"], m["case"]), m)  # the first answer counts; later copies are ignored
        elif m.get("t") == "forbidden" and isinstance(m.get("item"), str) and isinstance(m.get("name"), str):
            tripped.setdefault(m["item"], set()).add(m["name"][:80])
    results = {}
    for p in prepared:
        item = p.item
        fails: list[tuple[str, str]] = []  # (which check, why), in order
        found = analysis.analyse(cells, item.function, item.forbid, trusted)
        for n, (case, exp) in enumerate(zip(p.cases, p.expected)):
            what = f"check {n + 1} ({case.label})" if case.label else f"check {n + 1}"
            m = cases.get((item.grade_id, n))
            if m is None:
                fails.append((what, "no result (the notebook stopped, timed out or crashed before this check)"))
                continue
            if "error" in m:
                err = str(m["error"])[:400]
                if m.get("slow"):
                    why = (
                        f"{m['slow'][:80]} ran past the time limit"
                        if isinstance(m["slow"], str)
                        else err.removeprefix("TimeLimit: ")
                    )
                    fails.append((what, f"your code ran past the time limit of one call (an endless loop?): {why}"))
                elif m.get("forbidden") or err.startswith("ForbiddenCall"):
                    fails.append((what, "your code called a function this exercise forbids"))
                elif err.startswith("NotImplementedError"):
                    fails.append((what, "not written yet (it still raises NotImplementedError)"))
                elif m.get("unreadable"):
                    fails.append((what, f"your function returned something that is not a tensor or a number ({err})"))
                else:
                    fails.append((what, f"your function raised {err}"))
                continue
            try:
                got = _decode(m.get("out"))
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
        forbidden = sorted(set(found.forbidden) | tripped.get(item.grade_id, set()))
        cheat = []
        if found.missing:
            cheat.append(
                f"no definition of {item.function} was found in your notebook (define it with `def` or `class`)"
            )
        if forbidden:
            cheat.append(f"uses {', '.join(forbidden)}, which this exercise forbids (it would do the work for you)")
        if found.hatches:
            cheat.append(
                f"your notebook uses {', '.join(found.hatches)}, which can get around the grader's checks "
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
        results[item.grade_id] = {
            "points": float(item.points) if ok else 0.0,
            "max": float(item.points),
            "lines": lines,
        }
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


def status_of(header: dict, msgs: list[dict]) -> tuple[str, str]:
    state = header.get("state")
    sig = header.get("signal")
    stopped = _cell_no(msgs, "stopped")
    if stopped is not None:
        return "timeout", (
            f"code cell {stopped} was still running at its time limit (an endless loop at the top "
            "level of the cell?); the notebook stopped there"
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


def grade_entry(entry: Entry, lab: Lab, prepared: list[Prepared], worker: sandbox.Worker | None, opts: dict) -> dict:
    res: dict = {
        "student": entry.student,
        "status": entry.status,
        "note": entry.note,
        "items": {},
        "answers": {},
        "cell_errors": [],
        "sha256": None,
        "wall": 0.0,
    }
    if entry.status:
        return res
    data = entry.path.read_bytes()  # type: ignore[union-attr]
    res["sha256"] = hashlib.sha256(data).hexdigest()
    try:
        cells = parse_notebook(data)
    except ValueError as err:
        res.update(status="malformed", note=str(err))
        return res
    other = looks_like(cells, lab)
    if other is not None:
        res.update(status="wrong_lab", note=f"this is a notebook of the lab {other}, not of {lab.lab}")
        return res
    for m in lab.spec.manual:
        res["answers"][m.grade_id] = written_answer(cells, lab, m.grade_id)
    code = [c["source"] for c in cells if c["type"] == "code"]
    own = [src.strip() not in lab.released for src in code]  # the cells the student wrote or changed
    job = {
        "cells": code,
        "own": own,
        "timeout": opts["timeout"],
        "memory_mb": opts["memory"],
        "call_timeout": opts.get("call_timeout") or opts["timeout"] / CALL_SHARE,
        "items": [
            {
                "grade_id": p.item.grade_id,
                "function": p.item.function,
                "forbid": list(p.item.forbid),
                "call": p.item.call_source(),
                "call_name": getattr(p.item.call, "__name__", None),
                "cases": [(c.args, c.kwargs) for c in p.cases],
            }
            for p in prepared
        ],
    }
    assert worker is not None
    header, raw = worker.run(job)
    msgs = read_messages(raw)
    status, note = status_of(header, msgs)
    res.update(status=status, note=note, wall=header.get("wall", 0.0))
    res["items"] = score(prepared, msgs, code, lab.released)
    res["cell_errors"] = [  # only the student's own code: the lab's unchanged cells are not theirs to fix
        f"code cell {m['i'] + 1}: {str(m.get('error'))[:300]}"
        for m in msgs
        if m.get("t") == "cell" and isinstance(m.get("i"), int) and 0 <= m["i"] < len(code) and own[m["i"]]
    ][:20]
    return res


# -------------------------------------------------------------------------------------------- files
def current_umask() -> int:
    """The process's umask, read without changing it (``os.umask`` would, for every thread at once)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all, with the mode a plain ``open`` gives (0666 less the umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes 0600: course staff could not read the grades
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _cache_key(student: str, sha: str, seed: int, fingerprint: str) -> str:
    return hashlib.sha256(f"{student}\0{sha}\0{seed}\0{fingerprint}".encode()).hexdigest()


def run_batch(
    lab_id: str,
    submissions: Path,
    out: Path,
    *,
    course: Path = Path("."),
    jobs: int | None = None,
    timeout: float = 120.0,
    memory: int = 4096,
    fresh: bool = False,
    use_sandbox: bool = True,
    seed: int | None = None,
    call_timeout: float | None = None,
    lang: str = "en",
    log=print,
) -> list[dict]:
    """Grade every student under ``submissions`` into ``out``; returns the results, sorted by student.

    ``timeout``: wall-clock seconds per submission; ``call_timeout``: CPU seconds one cell or one graded call
    may use before it is stopped (default ``timeout / CALL_SHARE``): a looping function costs only its items.
    ``lang``: the language of the reports (``en`` or ``zh``); results and their cache stay in English."""
    if lang not in LANGUAGES:
        raise GradeError(f"unknown language {lang!r}: the grader speaks {', '.join(LANGUAGES)}")
    lab = load_lab(lab_id, course)
    entries = discover(submissions, lab_id)
    out = Path(out)
    if use_sandbox:
        bwrap = sandbox.bwrap_path()
        if bwrap is None:
            raise GradeError("bubblewrap not found. " + sandbox.BWRAP_HINT)
        ok, why = sandbox.bwrap_works(bwrap)
        if not ok:
            raise GradeError(f"bubblewrap cannot create its sandbox here ({why}). " + sandbox.BWRAP_HINT)
    elif os.geteuid() == 0 and sandbox.private_runtime_dirs():
        log(
            f"note: without bubblewrap, submissions run as uid {sandbox.uid_base()}+ and cannot enter "
            f"{', '.join(sandbox.private_runtime_dirs())}: they can import only the modules preloaded by the grader"
        )
    if fresh and out.exists():
        shutil.rmtree(out / "results", ignore_errors=True)
        (out / "run.json").unlink(missing_ok=True)
    fingerprint = spec_fingerprint(lab_id)
    run_file = out / "run.json"
    if run_file.exists():
        run = json.loads(run_file.read_text())
        if run.get("lab") != lab_id:
            raise GradeError(
                f"{out} holds grades of lab {run.get('lab')!r}; use another --out, or --fresh to start over"
            )
        if seed is not None and seed != run.get("seed"):
            raise GradeError(f"{out} was graded with seed {run.get('seed')}; use --fresh to change it")
        seed = int(run["seed"])
    else:
        seed = secrets.randbits(31) if seed is None else int(seed)
    run = {
        "lab": lab_id,
        "seed": seed,
        "spec_sha256": fingerprint,
        "sandbox": "bubblewrap" if use_sandbox else "none",
        "timeout": timeout,
        "call_timeout": call_timeout or timeout / CALL_SHARE,
        "memory_mb": memory,
        "students": len(entries),
    }
    write_atomic(run_file, json.dumps(run, indent=1) + "\n")
    prepared = prepare(lab, seed)
    cache = out / "results"
    cache.mkdir(parents=True, exist_ok=True)

    results: dict[str, dict] = {}
    todo: list[tuple[Entry, str | None]] = []
    for e in entries:
        if e.status:
            results[e.student] = grade_entry(e, lab, prepared, None, {})
            continue
        try:
            sha = hashlib.sha256(e.path.read_bytes()).hexdigest()  # type: ignore[union-attr]
        except OSError as err:
            results[e.student] = {
                **grade_entry(Entry(e.student, None, "malformed", f"unreadable: {err}"), lab, prepared, None, {})
            }
            continue
        key = _cache_key(e.student, sha, seed, fingerprint)
        cached = cache / f"{key}.json"
        if cached.exists():
            try:
                results[e.student] = json.loads(cached.read_text())
                continue
            except ValueError:
                pass
        todo.append((e, key))
    log(
        f"qkv grade {lab_id}: {len(entries)} students, {len(entries) - len(todo)} already graded, {len(todo)} to grade (seed {seed})"
    )

    if todo:
        jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        tmp = Path(tempfile.mkdtemp(prefix="qkv-grade-lib-"))
        lib = sandbox.make_lib(Path(__file__).resolve().parent.parent, tmp)
        pending = list(todo)
        lock = threading.Lock()
        opts = {"timeout": timeout, "memory": memory, "call_timeout": call_timeout}
        done_count = [0]

        def work(index: int) -> None:
            worker = sandbox.Worker(index, lib, sandbox=use_sandbox, log=tmp / f"worker-{index}.log")
            try:
                while True:
                    with lock:
                        if not pending:
                            return
                        entry, key = pending.pop(0)
                    try:
                        res = grade_entry(entry, lab, prepared, worker, opts)
                    except sandbox.SandboxError:
                        raise
                    except Exception as err:  # a bug of ours must not stop the batch: the row says so
                        res = {
                            "student": entry.student,
                            "status": "crashed",
                            "note": f"grader error: {err}",
                            "items": {},
                            "answers": {},
                            "cell_errors": [],
                            "sha256": None,
                            "wall": 0.0,
                        }
                    if res.get("note") != WORKER_FAILED and not res.get("note", "").startswith("grader error"):
                        write_atomic(cache / f"{key}.json", json.dumps(res))  # our own failures are retried next run
                    with lock:
                        results[entry.student] = res
                        done_count[0] += 1
                        log(
                            f"  [{done_count[0]}/{len(todo)}] {entry.student}: {res['status']} "
                            f"{sum(i['points'] for i in res['items'].values()):g}/{lab.spec.max_auto:g}"
                        )
            finally:
                worker.stop()

        try:
            with ThreadPoolExecutor(jobs) as pool:
                futures = [pool.submit(work, j) for j in range(jobs)]
                try:
                    for f in futures:
                        f.result()
                except KeyboardInterrupt:
                    with lock:
                        pending.clear()  # finish the submissions in progress, start no more; rerun to resume
                    log("interrupted: finishing the submissions in progress; run the same command again to resume")
                    raise
        except sandbox.SandboxError as err:
            raise GradeError(str(err)) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    ordered = [results[s] for s in sorted(results)]
    from . import reports

    reports.write_all(out, lab, ordered, run, lang)
    return ordered


def default_jobs() -> int:
    return os.cpu_count() or 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `qkv grade`")
