"""Grading a folder of submissions: one job per submission for the sandboxed workers, the result cache, the pool.

Layer: grader side, above ``scoring``, ``submissions`` and ``sandbox``; imports the standard library and the
grader's layers below it, never ``reports`` or ``command``. Results are cached per student and submission hash, seed and
the fingerprint of the grading code, so an interrupted batch resumes; our own failures are not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import bwrap, sandbox
from .atomic import write_atomic
from .fingerprint import spec_fingerprint
from .jobs import GRADE, Job, JobItem, Limits
from .lab import RELEASED, GradeError, Lab, looks_like, the_courses
from .magics import python_source
from .messages import GRADER_ERROR, UNREADABLE, WORKER_FAILED, WRONG_LAB
from .protocol import read_messages
from .results import Result
from .scoring import Prepared, cell_errors, joined, notes, prepare, score, status_of
from .submissions import Entry, discover, parse_notebook, written_answer


def grade_entry(
    entry: Entry,
    lab: Lab,
    prepared: list[Prepared],
    worker: sandbox.Worker | None,
    *,
    limits: Limits,
) -> Result:
    """One student's result: their notebook run by ``worker`` (unused when the entry cannot be graded at all)."""
    res = Result(entry.student, entry.status, entry.note)
    if entry.status:
        return res
    data = entry.path.read_bytes()  # type: ignore[union-attr]
    res.sha256 = hashlib.sha256(data).hexdigest()
    try:
        cells = parse_notebook(data)
    except ValueError as err:
        res.status, res.note = "malformed", err.args[0]  # parse_notebook's message
        return res
    other = looks_like(cells, lab)
    if other is not None:
        res.status, res.note = "wrong_lab", WRONG_LAB(other=other, lab=lab.lab)
        return res
    for m in lab.spec.manual:
        res.answers[m.grade_id] = written_answer(cells, lab, m.grade_id)
    code = [c["source"] for c in cells if c["type"] == "code"]
    known = [the_courses(c, lab) for c in cells if c["type"] == "code"]
    own = [not k for k in known]  # the cells the student wrote or changed: their errors are the student's
    job = Job(
        cells=[python_source(src) for src in code],  # as IPython runs them (magics, shell escapes)
        course=[i for i, k in enumerate(known) if k == RELEASED],  # cells whose code keeps the course's rights
        limits=limits,
        items=[
            JobItem(
                grade_id=p.item.grade_id,
                function=p.item.function,
                forbid=list(p.item.forbid),
                call=p.item.call_source(),
                call_name=getattr(p.item.call, "__name__", None),
                helpers=p.item.helper_sources(),
                atol=p.item.atol,
                rtol=p.item.rtol,
                cases=[(c.args, c.kwargs) for c in p.cases],
            )
            for p in prepared
        ],
    )
    assert worker is not None
    header, raw = worker.run(job)
    msgs = read_messages(raw)
    res.status, note = status_of(header, msgs, code)
    res.note = joined(note, notes(msgs))
    res.wall = header.wall
    res.items = score(prepared, msgs, code, lab.released | {src.strip() for src, mine in zip(code, own) if not mine})
    res.cell_errors = cell_errors(msgs, own)
    return res


def check_sandbox(use_sandbox: bool, log) -> None:
    """Refuse to start when bubblewrap is wanted but missing or unable to run; say what ``--no-sandbox`` means here."""
    if use_sandbox:
        path = bwrap.bwrap_path()
        if path is None:
            raise GradeError("bubblewrap not found. " + bwrap.BWRAP_HINT)
        ok, why = bwrap.bwrap_works(path)
        if not ok:
            raise GradeError(f"bubblewrap cannot create its sandbox here ({why}). " + bwrap.BWRAP_HINT)
    elif os.geteuid() == 0 and sandbox.private_runtime_dirs():
        log(
            f"note: without bubblewrap, submissions run as uid {sandbox.uid_base()}+ and cannot enter "
            f"{', '.join(sandbox.private_runtime_dirs())}: they can import only the modules preloaded by the grader"
        )


def open_run(out: Path, lab_id: str, settings: dict, *, seed: int | None, fresh: bool) -> dict:
    """``out/run.json``: the batch's lab, seed and settings; an existing one keeps its seed (to resume), ``fresh``
    forgets it and the cached results."""
    if fresh and out.exists():
        shutil.rmtree(out / "results", ignore_errors=True)
        (out / "run.json").unlink(missing_ok=True)
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
    run = {"lab": lab_id, "seed": seed, **settings}
    write_atomic(run_file, json.dumps(run, indent=1) + "\n")
    return run


def _cache_key(student: str, sha: str, seed: int, fingerprint: str) -> str:
    return hashlib.sha256(f"{student}\0{sha}\0{seed}\0{fingerprint}".encode()).hexdigest()


def _ours(res: Result) -> bool:
    """A failure of the grader's own (its worker, a bug): not cached, so the next run grades it again."""
    return res.note == WORKER_FAILED() or (res.note is not None and res.note.t == GRADER_ERROR.name)


def grade_folder(
    lab: Lab,
    submissions: Path,
    out: Path,
    *,
    jobs: int | None = None,
    limits: Limits = GRADE,
    fresh: bool = False,
    use_sandbox: bool = True,
    seed: int | None = None,
    fork_worker: bool = False,
    log=print,
) -> tuple[list[Result], dict]:
    """Every student under ``submissions`` graded, cached in ``out/results``: the results sorted by student, and
    the run's record (``out/run.json``).

    ``limits``: per submission (``Limits.of``): the wall clock, memory, and the CPU time one graded call may use
    before it is stopped (a looping function costs only its items) and one cell (a cell that runs past it stops
    the notebook there, charged to that cell).
    ``seed``: the inputs' seed for a new ``out`` (default: random); ``fresh``: forget what ``out`` holds.
    ``fork_worker`` (``qkv check``, without the sandbox): the worker is forked from this process, which has
    imported torch already, instead of started afresh (a student's own notebook, on their own machine)."""
    entries = discover(submissions, lab.lab)
    out = Path(out)
    check_sandbox(use_sandbox, log)
    fingerprint = spec_fingerprint(lab.lab)
    settings = {
        "spec_sha256": fingerprint,
        "sandbox": "bubblewrap" if use_sandbox else "none",
        "timeout": limits.timeout,
        "call_timeout": limits.call_timeout,
        "memory_mb": limits.memory_mb,
        "students": len(entries),
    }
    run = open_run(out, lab.lab, settings, seed=seed, fresh=fresh)
    seed = run["seed"]
    prepared = prepare(lab, seed)
    cache = out / "results"
    cache.mkdir(parents=True, exist_ok=True)

    results: dict[str, Result] = {}
    todo: list[tuple[Entry, str]] = []
    for e in entries:
        if e.status:
            results[e.student] = Result(e.student, e.status, e.note)
            continue
        try:
            sha = hashlib.sha256(e.path.read_bytes()).hexdigest()  # type: ignore[union-attr]
        except OSError as err:
            results[e.student] = Result(e.student, "malformed", UNREADABLE(error=str(err)))
            continue
        key = _cache_key(e.student, sha, seed, fingerprint)
        cached = cache / f"{key}.json"
        if cached.exists():
            try:
                results[e.student] = Result.from_json(json.loads(cached.read_text()))
                continue
            except (ValueError, TypeError, KeyError, AttributeError):
                pass
        todo.append((e, key))
    log(
        f"qkv grade {lab.lab}: {len(entries)} students, {len(entries) - len(todo)} already graded, {len(todo)} to grade (seed {seed})"
    )
    if todo:
        results.update(
            _pool(lab, prepared, todo, cache, limits, jobs=jobs, use_sandbox=use_sandbox, fork=fork_worker, log=log)
        )
    return [results[s] for s in sorted(results)], run


def _pool(
    lab: Lab,
    prepared: list[Prepared],
    todo: list[tuple[Entry, str]],
    cache: Path,
    limits: Limits,
    *,
    jobs: int | None,
    use_sandbox: bool,
    fork: bool = False,
    log,
) -> dict[str, Result]:
    """Grade ``todo`` with ``jobs`` workers side by side; each result is cached as soon as it is known."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    tmp = Path(tempfile.mkdtemp(prefix="qkv-grade-lib-"))
    lib = sandbox.make_lib(Path(__file__).resolve().parent.parent, tmp)
    pending = list(todo)
    lock = threading.Lock()
    results: dict[str, Result] = {}

    def work(index: int) -> None:
        worker = sandbox.Worker(index, lib, sandbox=use_sandbox, log=tmp / f"worker-{index}.log", fork=fork)
        try:
            while True:
                with lock:
                    if not pending:
                        return
                    entry, key = pending.pop(0)
                try:
                    res = grade_entry(entry, lab, prepared, worker, limits=limits)
                except sandbox.SandboxError:
                    raise
                except Exception as err:  # a bug of ours must not stop the batch: the row says so
                    res = Result(entry.student, "crashed", GRADER_ERROR(error=str(err)))
                if not _ours(res):
                    write_atomic(cache / f"{key}.json", json.dumps(res.to_json()))  # ours are retried next run
                with lock:
                    results[entry.student] = res
                    log(
                        f"  [{len(results)}/{len(todo)}] {entry.student}: {res.status} {res.points:g}/{lab.spec.max_auto:g}"
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
    return results
