"""The grader on generated variants of every lab's solution: which rewrites keep full marks, which bugs cost
exactly their item.

    .venv/bin/python benchmarks/grader_variants.py [--labs masks,scaling] [--combos 25] [--per-bug 1]
        [--jupyter 0]

For each lab: every applicable rewrite alone, ``--combos`` seeded combinations of two to five rewrites, and
each classic bug of the lab's spec test planted in ``--per-bug`` variants (tests/grading/variants/), graded
sandboxed in ONE ``qkv grade`` batch per lab. A correct variant must keep every point with feedback that names
no error; a bug variant must lose exactly its item. Prints a table per lab (each rewrite: alone, and in how many
combinations it failed, with the first feedback) and writes benchmarks/results/grader_variants.json.
``--rerun OLD.json`` grades only the variants that failed in an earlier sweep (e.g. on a grader with fixes
merged). ``--jupyter K`` also runs the first K correct variants of each lab in a real kernel (nbclient) and lists any
error they raise there (there should be none: the rewrites keep what the notebook computes). Not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "grading"))
from _common import RESULTS, machine, table, write_json
from variants import Variant, combinations, planted, singles
from variants.judge import problems

from qkv.grading.testing import COURSE, grade_notebooks
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # every lab of the course: a new lab gets its variants without a list to keep


def failed_before(path: Path, lab: str) -> list[Variant]:
    """The variants of ``lab`` that failed in an earlier sweep's JSON (to try them again on a fixed grader)."""
    rows = json.loads(path.read_text())["variants"]
    return [Variant(lab, r["seed"], tuple(r["rewrites"]), r["bug"]) for r in rows if r["lab"] == lab and r["problems"]]


def sweep(lab: str, combos: int, per_bug: int, jobs: int, rerun: Path | None = None) -> list[dict]:
    if rerun:
        variants = failed_before(rerun, lab)
    else:
        variants = singles(lab) + combinations(lab, combos) + planted(lab, seed=100, per_bug=per_bug)
    if not variants:
        return []
    keyed = {f"v{n:03d}": v for n, v in enumerate(variants)}
    with tempfile.TemporaryDirectory(prefix=f"variants-{lab}-") as tmp:
        start = time.perf_counter()
        results = grade_notebooks(lab, {k: v.notebook() for k, v in keyed.items()}, Path(tmp), jobs=jobs)
        wall = time.perf_counter() - start
    print(f"{lab}: {len(keyed)} variants graded in {wall:.0f} s", flush=True)
    return [
        {
            "lab": lab,
            "seed": v.seed,
            "rewrites": list(v.rewrites),
            "bug": v.bug,
            "name": v.name,
            "problems": problems(v, results[k]),
            "points": {gid: r.points for gid, r in results[k].items.items()},
            "wall": results[k].wall,
        }
        for k, v in keyed.items()
    ]


def rewrite_rows(rows: list[dict]) -> list[dict]:
    """One row per rewrite: failed alone?, failed in how many correct combinations, the first problem."""
    alone, total, failed, first = {}, defaultdict(int), defaultdict(int), {}
    for row in rows:
        if row["bug"]:
            continue
        for name in row["rewrites"]:
            if len(row["rewrites"]) == 1:
                alone[name] = "FAIL" if row["problems"] else "ok"
            else:
                total[name] += 1
                failed[name] += bool(row["problems"])
            if row["problems"] and name not in first and (len(row["rewrites"]) == 1 or name not in alone):
                first[name] = row["problems"][0][:150]
    return [
        {"rewrite": n, "alone": alone.get(n), "combos": f"{failed[n]}/{total[n]}", "feedback": first.get(n, "")}
        for n in sorted(set(alone) | set(total))
    ]


def jupyter_errors(lab: str, combos: int, k: int) -> list[dict]:
    from variants.jupyter import errors_in_jupyter

    variants = (singles(lab) + combinations(lab, combos))[:k]
    return [{"lab": lab, "name": v.name, "errors": errors_in_jupyter(v.notebook())} for v in variants]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labs", default=",".join(LABS))
    p.add_argument("--combos", type=int, default=25, help="seeded combinations per lab (default 25)")
    p.add_argument("--per-bug", type=int, default=1, help="variants per classic bug (default 1)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--jupyter", type=int, default=0, help="run the first K correct variants per lab in Jupyter")
    p.add_argument("--rerun", type=Path, help="grade only the variants that failed in this earlier sweep's JSON")
    p.add_argument("--out", type=Path, default=RESULTS / "grader_variants.json")
    args = p.parse_args()
    rows, summary, jupyter = [], [], []
    for lab in args.labs.split(","):
        lab_rows = sweep(lab, args.combos, args.per_bug, args.jobs, args.rerun)
        rows += lab_rows
        correct = [r for r in lab_rows if not r["bug"]]
        bugs = [r for r in lab_rows if r["bug"]]
        summary.append(
            {
                "lab": lab,
                "correct": len(correct),
                "correct_ok": sum(not r["problems"] for r in correct),
                "bugs": len(bugs),
                "bugs_ok": sum(not r["problems"] for r in bugs),
            }
        )
        print(f"\n{lab}: rewrites (alone; failed/total in combinations; first feedback)")
        print(table(rewrite_rows(lab_rows), [(k, k, "") for k in ("rewrite", "alone", "combos", "feedback")]))
        for r in bugs:
            if r["problems"]:
                print(f"  bug {r['bug']!r} [{'+'.join(r['rewrites'])}]: {r['problems'][0][:200]}")
        if args.jupyter:
            jupyter += jupyter_errors(lab, args.combos, args.jupyter)
            for j in jupyter:
                if j["lab"] == lab and j["errors"]:
                    print(f"  raises in Jupyter: {j['name']}: {j['errors']}")
    cols = [(k, k, "") for k in ("lab", "correct", "correct_ok", "bugs", "bugs_ok")]
    print("\n" + table(summary, cols))
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    payload = {"machine": machine(), "args": settings, "summary": summary, "variants": rows, "jupyter": jupyter}
    write_json(args.out, payload)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
