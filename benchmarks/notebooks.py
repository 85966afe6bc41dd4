"""How long every notebook takes to run, and how long the book takes to build, cold and cached.

Each notebook under ``chapters/``, ``labs/`` and ``solutions/`` is executed with nbclient in a
fresh kernel, in its own folder, as the book and the tests run it (cells tagged
``raises-exception`` may raise; any other error is reported). Recorded: the time of the cells
(from nbclient's per-cell timestamps), the wall time including the kernel's start, and the slowest
cell. Then the book is built twice into a temporary ``--path-output``: cold (an empty execution
cache, every chapter executed) and again (cached: nothing to execute).

    python benchmarks/notebooks.py                   # writes results/notebooks.json
    python benchmarks/notebooks.py --skip-book chapters/at_scale.ipynb
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, table, write_json

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("chapters", "labs", "solutions")
NOTEBOOK_LIMIT_S = 20.0
CELL_LIMIT_S = 15.0
BOOK_LIMIT_S = 600.0


def _stamp(cell, key: str) -> datetime | None:
    value = cell.get("metadata", {}).get("execution", {}).get(key)
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def run_notebook(path: Path, timeout: int) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    row = {"notebook": str(path.relative_to(ROOT)), "status": "ok"}
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        row["status"] = "error: " + next((s for s in str(err).splitlines()[::-1] if s.strip()), "cell error")[:100]
    except Exception as err:  # a timeout, a dead kernel: report it and go on to the next notebook
        row["status"] = f"error: {type(err).__name__}: {str(err)[:100]}"
    row["wall_s"] = time.perf_counter() - start
    cell_times = []
    for i, cell in enumerate(nb.cells):
        a, b = _stamp(cell, "iopub.execute_input"), _stamp(cell, "shell.execute_reply")
        if a and b:
            cell_times.append(((b - a).total_seconds(), i))
    row["cells_s"] = sum(t for t, _ in cell_times)
    if cell_times:
        row["slowest_cell_s"], row["slowest_cell"] = max(cell_times)
    row["over_limit"] = row["cells_s"] > NOTEBOOK_LIMIT_S or row.get("slowest_cell_s", 0) > CELL_LIMIT_S
    return row


def build_book(path_output: Path) -> tuple[float, int, str]:
    cmd = [
        str(Path(sys.executable).parent / "jupyter-book"),
        "build",
        "-W",
        "-n",
        "--keep-going",
        str(ROOT),
        "--path-output",
        str(path_output),
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
    return elapsed, proc.returncode, tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="only these (default: every notebook in chapters/, labs/, solutions/)"
    )
    parser.add_argument("--skip-book", action="store_true", help="do not build the book")
    parser.add_argument("--skip-notebooks", action="store_true", help="only build the book")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell before nbclient gives up")
    parser.add_argument("--out", type=Path, default=RESULTS / "notebooks.json")
    args = parser.parse_args(argv)

    if args.notebooks:
        paths = [p.resolve() for p in args.notebooks]
    else:
        paths = sorted(p for f in FOLDERS for p in (ROOT / f).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # no debugger warning on stderr

    rows = []
    if not args.skip_notebooks:
        print(
            f"running {len(paths)} notebooks (limits: {NOTEBOOK_LIMIT_S:.0f} s a notebook, {CELL_LIMIT_S:.0f} s a cell)"
        )
        for path in paths:
            row = run_notebook(path, args.timeout)
            rows.append(row)
            flag = "  OVER LIMIT" if row["over_limit"] else ""
            print(
                f"  {row['notebook']:60s} {row['cells_s']:6.1f} s cells {row['wall_s']:6.1f} s wall  {row['status']}{flag}",
                flush=True,
            )
        print(
            table(
                rows,
                [
                    ("notebook", "notebook", "s"),
                    ("cells_s", "cells s", ".1f"),
                    ("wall_s", "wall s", ".1f"),
                    ("slowest_cell_s", "slowest cell s", ".1f"),
                    ("slowest_cell", "cell #", "d"),
                    ("status", "status", "s"),
                ],
            )
        )

    book = {}
    if not args.skip_book:
        with tempfile.TemporaryDirectory(prefix="qkv-bench-book-") as tmp:
            for kind in ("cold", "cached"):
                elapsed, rc, tail = build_book(Path(tmp))
                book[kind] = {"seconds": elapsed, "returncode": rc}
                print(f"book build, {kind}: {elapsed:.1f} s (exit {rc})", flush=True)
                if rc != 0:
                    book[kind]["tail"] = tail
                    print(tail)
        book["limit_cold_s"] = BOOK_LIMIT_S

    payload = {
        "benchmark": "notebooks",
        "machine": machine(),
        "limits": {"notebook_s": NOTEBOOK_LIMIT_S, "cell_s": CELL_LIMIT_S, "book_cold_s": BOOK_LIMIT_S},
        "notebooks": rows,
        "book": book,
    }
    if not args.skip_notebooks:
        total = sum(r["wall_s"] for r in rows)
        print(
            f"{len(rows)} notebooks, {total:.0f} s wall in all; over a limit: "
            + (", ".join(r["notebook"] for r in rows if r["over_limit"]) or "none")
            + "; errors: "
            + (", ".join(r["notebook"] for r in rows if r["status"] != "ok") or "none")
        )
    print(f"wrote {write_json(args.out, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
