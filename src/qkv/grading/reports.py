"""What ``qkv grade`` writes: grades.csv, feedback/<student>.html, manual/<grade_id>.html, summary.html,
Gradescope's results.json. Everything a student wrote is escaped; every file is written atomically.

Layer: grader side, above ``results`` and ``lab``; imports the standard library and, of the grader, ``atomic``, ``lab``
and ``results``; it never grades (``command.py`` hands it the results).
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
from collections import Counter
from pathlib import Path

from .atomic import write_atomic
from .lab import Lab
from .results import Result

STATUS_WORDS = {
    "graded": "graded",
    "malformed": "could not be read as a notebook",
    "timeout": "stopped at the time limit",
    "memory": "ran out of memory",
    "crashed": "stopped early",
    "ambiguous": "several notebooks, none named after the lab",
    "duplicate": "submitted twice (a file and a folder)",
    "wrong_lab": "the notebook of another lab",
}
CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45;
color:#1b1b1b;background:#fff}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;
text-align:left;vertical-align:top}.pass{color:#176a2c}.fail{color:#a11}.answer{white-space:pre-wrap;
background:#f6f6f6;padding:.6rem;border-radius:4px}code{background:#f2f2f2;padding:0 .2rem}"""


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{CSS}</style></head>'
        f"<body>\n{body}\n</body></html>\n"
    )


def csv_safe(text: str) -> str:
    """A cell a spreadsheet would run as a formula gets a leading apostrophe (CSV only)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def manual_scores(out: Path, lab: Lab) -> dict[str, dict[str, float]]:
    """Scores entered by hand in ``DIR/manual_scores.csv`` (student, then one column per written question)."""
    path = out / "manual_scores.csv"
    ids = [m.grade_id for m in lab.spec.manual]
    if not ids:
        return {}
    if not path.exists():
        write_atomic(path, ",".join(["student", *ids]) + "\n")
        return {}
    scores: dict[str, dict[str, float]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            student = (row.get("student") or "").lstrip("'")
            for gid in ids:
                value = (row.get(gid) or "").strip()
                try:
                    pts = float(value)
                except ValueError:
                    continue
                maximum = float(lab.spec.item(gid).points)
                if 0 <= pts <= maximum:
                    scores.setdefault(student, {})[gid] = pts
    return scores


def totals(res: Result, lab: Lab, entered: dict[str, float]) -> tuple[float, float]:
    total = res.points + sum(entered.values())
    maximum = lab.spec.max_auto + sum(float(lab.spec.item(g).points) for g in entered)
    return total, maximum


def write_csv(out: Path, lab: Lab, results: list[Result], manual: dict) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", "total", "max_total", "status", *lab.order])
    for res in results:
        entered = manual.get(res.student, {})
        total, maximum = totals(res, lab, entered)
        row = [csv_safe(res.student), f"{total:g}", f"{maximum:g}", res.status]
        for gid in lab.order:
            if gid in res.items:
                row.append(f"{res.items[gid].points:g}")
            elif gid in entered:
                row.append(f"{entered[gid]:g}")
            else:
                row.append("")
        w.writerow(row)
    write_atomic(out / "grades.csv", buf.getvalue())


def feedback_html(res: Result, lab: Lab, entered: dict[str, float]) -> str:
    e = html.escape
    total, maximum = totals(res, lab, entered)
    parts = [
        f"<h1>Lab {e(lab.lab)}: feedback for {e(res.student)}</h1>",
        f"<p><strong>{total:g} / {maximum:g} points</strong> (autograded"
        f"{' and hand-graded' if entered else ''}). Status: {e(STATUS_WORDS.get(res.status, res.status))}"
        f"{': ' + e(res.note) if res.note else ''}.</p>",
    ]
    if res.status in ("malformed", "ambiguous", "duplicate", "wrong_lab"):
        parts.append(
            "<p>Your submission could not be graded, so every exercise scores 0. Please ask your instructor.</p>"
        )
    parts.append("<table><tr><th>exercise</th><th>points</th><th>what the grader found</th></tr>")
    for gid in lab.order:
        spec_item = lab.spec.item(gid)
        name = getattr(spec_item, "title", "") or getattr(spec_item, "function", "") or gid
        if gid in res.items:
            r = res.items[gid]
            cls = "pass" if r.points == r.max else "fail"
            desc = getattr(spec_item, "describe", "")
            lines = "".join(f"<li>{e(line)}</li>" for line in r.lines)
            parts.append(
                f"<tr><td><code>{e(name)}</code><br><small>{e(desc)}</small></td>"
                f'<td class="{cls}">{r.points:g} / {r.max:g}</td><td><ul>{lines}</ul></td></tr>'
            )
        elif gid in entered:
            parts.append(
                f"<tr><td>{e(name)}</td><td>{entered[gid]:g} / {float(spec_item.points):g}</td>"
                "<td>graded by hand</td></tr>"
            )
        else:
            note = "graded by hand; not yet graded" if gid in res.answers or res.status == "graded" else "not graded"
            parts.append(f"<tr><td>{e(name)}</td><td>– / {float(spec_item.points):g}</td><td>{e(note)}</td></tr>")
    parts.append("</table>")
    if res.cell_errors:
        items = "".join(f"<li><code>{e(c)}</code></li>" for c in res.cell_errors)
        parts.append(
            f"<h2>Cells that raised an error when your notebook was run</h2><ul>{items}</ul>"
            "<p>A failing cell does not stop the others, but a function it should define is then missing.</p>"
        )
    return _page(f"{lab.lab}: {res.student}", "\n".join(parts))


def manual_html(lab: Lab, gid: str, results: list[Result], manual: dict) -> str:
    e = html.escape
    item = lab.spec.item(gid)
    parts = [
        f"<h1>{e(lab.lab)}: {e(gid)} ({float(item.points):g} points, graded by hand)</h1>",
        f'<h2>The question</h2><div class="answer">{e(lab.prompts.get(gid, ""))}</div>',
        "<p>Enter scores in <code>manual_scores.csv</code> (next to <code>grades.csv</code>, one column per "
        "question) and run <code>qkv grade</code> again: totals then include them.</p>",
        "<h2>Answers</h2><table><tr><th>student</th><th>answer</th><th>entered</th></tr>",
    ]
    for res in results:
        ans = res.answers.get(gid)
        text = "(no answer found)" if ans is None else ans.strip() or "(empty)"
        if text.strip() == "YOUR ANSWER HERE":
            text = "(not answered)"
        got = manual.get(res.student, {}).get(gid)
        parts.append(
            f'<tr><td>{e(res.student)}</td><td><div class="answer">{e(text)}</div></td>'
            f"<td>{'' if got is None else f'{got:g}'}</td></tr>"
        )
    parts.append("</table>")
    return _page(f"{lab.lab}: {gid}", "\n".join(parts))


def summary_html(lab: Lab, results: list[Result], run: dict, manual: dict) -> str:
    e = html.escape
    n = len(results)
    statuses = Counter(r.status for r in results)
    parts = [
        f"<h1>Lab {e(lab.lab)}: class summary</h1>",
        f"<p>{n} students; seed {run['seed']}; sandbox: {e(run['sandbox'])}. "
        + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
        + "</p>",
        "<h2>Per item</h2><table><tr><th>item</th><th>points</th><th>full marks</th><th>mean</th>"
        "<th>most common failure</th></tr>",
    ]
    for gid in lab.order:
        item = lab.spec.item(gid)
        if gid in {m.grade_id for m in lab.spec.manual}:
            entered = [manual[s][gid] for s in manual if gid in manual[s]]
            mean = f"{sum(entered) / len(entered):.2f}" if entered else "–"
            parts.append(
                f"<tr><td>{e(gid)} (by hand)</td><td>{float(item.points):g}</td><td>{len(entered)} entered</td>"
                f"<td>{mean}</td><td></td></tr>"
            )
            continue
        pts = [r.items[gid].points if gid in r.items else 0.0 for r in results]
        full = sum(p == float(item.points) for p in pts)
        reasons = Counter()
        for r in results:
            if gid in r.items and r.items[gid].points < r.items[gid].max:
                lines = r.items[gid].lines
                reasons[(lines[1] if len(lines) > 1 else lines[0]).split(":", 1)[-1].strip()[:120]] += 1
        common = reasons.most_common(1)[0] if reasons else None
        parts.append(
            f"<tr><td><code>{e(gid)}</code></td><td>{float(item.points):g}</td><td>{full} / {n}</td>"
            f"<td>{(sum(pts) / n if n else 0):.2f}</td><td>{e(common[0]) + f' ({common[1]})' if common else ''}</td></tr>"
        )
    parts.append("</table><h2>Totals</h2><table><tr><th>student</th><th>total</th><th>status</th></tr>")
    for r in results:
        total, maximum = totals(r, lab, manual.get(r.student, {}))
        parts.append(f"<tr><td>{e(r.student)}</td><td>{total:g} / {maximum:g}</td><td>{e(r.status)}</td></tr>")
    parts.append("</table>")
    return _page(f"{lab.lab}: summary", "\n".join(parts))


def _file_name(student: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.@ " or ord(c) > 127 else "_" for c in student).strip(". ")
    if safe != student:  # two names that differ only in replaced characters must not share a file
        safe = f"{safe or '_'}-{hashlib.sha256(student.encode()).hexdigest()[:8]}"
    return safe


def write_all(out: Path, lab: Lab, results: list[Result], run: dict) -> None:
    manual = manual_scores(out, lab)
    write_csv(out, lab, results, manual)
    for res in results:
        write_atomic(
            out / "feedback" / f"{_file_name(res.student)}.html",
            feedback_html(res, lab, manual.get(res.student, {})),
        )
    for m in lab.spec.manual:
        write_atomic(out / "manual" / f"{m.grade_id}.html", manual_html(lab, m.grade_id, results, manual))
    write_atomic(out / "summary.html", summary_html(lab, results, run, manual))


def gradescope_json(res: Result, lab: Lab, note: str = "") -> str:
    """Gradescope's results.json for one submission (autograded items; written answers are graded there by hand)."""
    tests = []
    for gid in lab.order:
        if gid not in res.items:
            continue
        r = res.items[gid]
        tests.append(
            {
                "name": gid,
                "score": r.points,
                "max_score": r.max,
                "output": "\n".join(r.lines),
                "status": "passed" if r.points == r.max else "failed",
                "visibility": "visible",
            }
        )
    output = f"Status: {STATUS_WORDS.get(res.status, res.status)}"
    if res.note:
        output += f" ({res.note})"
    if res.cell_errors:
        output += "\nCells that raised an error:\n" + "\n".join(res.cell_errors)
    if lab.spec.manual:
        output += "\nWritten answers (" + ", ".join(m.grade_id for m in lab.spec.manual) + ") are graded by hand."
    if note:
        output += "\n" + note
    total = sum(t["score"] for t in tests)
    return json.dumps({"score": total, "output": output, "tests": tests, "visibility": "visible"}, indent=1)
