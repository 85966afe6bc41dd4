"""What ``qkv grade`` writes: grades.csv, feedback/<student>.html, manual/<grade_id>.html, summary.html,
Gradescope's results.json, in English or Chinese (``--lang``: the words come from :mod:`.messages`; the results
keep the grader's messages, rendered here in the report's language). Everything a student wrote is escaped; every file is written
atomically.

Layer: grader side, above ``results``, ``lab`` and ``messages``; imports the standard library, ``qkv.labs`` and,
of the grader, ``atomic``, ``lab``, ``messages`` and ``results``; it never grades (``command.py`` hands it the
results). Each takes :class:`.results.Result` objects (the cache is read back by ``Result.from_json``).
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..labs import EDITIONS
from . import messages as M
from .atomic import write_atomic
from .lab import Lab, questions
from .messages import Msg, Param, Translator, translator
from .results import Result

EN = translator("en")

CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45;
color:#1b1b1b;background:#fff}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem;
text-align:left;vertical-align:top}.pass{color:#176a2c}.fail{color:#a11}.answer,.question{white-space:pre-wrap;
background:#f6f6f6;padding:.6rem;border-radius:4px}code{background:#f2f2f2;padding:0 .2rem}"""


def _page(title: str, body: str, t: Translator) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="{t.html_lang}"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
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


def _code(escaped: str) -> str:
    """`quoted` code in an escaped note (a cell's first line, a shell command) shown as code."""
    return re.sub(r"`([^`<>]+)`", r"<code>\1</code>", escaped)


def feedback_html(res: Result, lab: Lab, entered: dict[str, float], t: Translator = EN) -> str:
    e = html.escape
    total, maximum = totals(res, lab, entered)
    status = t.status(res.status)
    state = t(M.STATUS_WITH_NOTE, status=status, note=t(res.note)) if res.note else t(M.STATUS, status=status)
    parts = [
        f"<h1>{e(t(M.FEEDBACK_TITLE, lab=lab.lab, student=res.student))}</h1>",
        f"<p><strong>{e(t(M.POINTS, total=f'{total:g}', maximum=f'{maximum:g}'))}</strong> "
        f"{e(t(M.AUTOGRADED_AND_BY_HAND if entered else M.AUTOGRADED))} {_code(e(state))}</p>",
    ]
    if res.status in ("malformed", "ambiguous", "duplicate", "wrong_lab"):
        parts.append(f"<p>{e(t(M.NOT_GRADABLE))}</p>")
    parts.append(f"<table><tr><th>{e(t(M.EXERCISE))}</th><th>{e(t(M.POINTS_HEADER))}</th><th>{e(t(M.FOUND))}</th></tr>")
    for gid in lab.order:
        spec_item = lab.spec.item(gid)
        title = getattr(spec_item, "title", "")
        name = t.text(title) if title else getattr(spec_item, "function", "") or gid
        if gid in res.items:
            r = res.items[gid]
            cls = "pass" if r.points == r.max else "fail"
            desc = t.text(getattr(spec_item, "describe", ""))
            lines = "".join(f"<li>{e(t(line))}</li>" for line in r.lines)
            parts.append(
                f"<tr><td><code>{e(name)}</code><br><small>{e(desc)}</small></td>"
                f'<td class="{cls}">{r.points:g} / {r.max:g}</td><td><ul>{lines}</ul></td></tr>'
            )
        elif gid in entered:
            parts.append(
                f"<tr><td>{e(name)}</td><td>{entered[gid]:g} / {float(spec_item.points):g}</td>"
                f"<td>{e(t(M.BY_HAND))}</td></tr>"
            )
        else:
            note = M.BY_HAND_NOT_YET if gid in res.answers or res.status == "graded" else M.NOT_GRADED
            parts.append(f"<tr><td>{e(name)}</td><td>– / {float(spec_item.points):g}</td><td>{e(t(note))}</td></tr>")
    parts.append("</table>")
    if res.cell_errors:
        items = "".join(f"<li><code>{e(t(c))}</code></li>" for c in res.cell_errors)
        parts.append(f"<h2>{e(t(M.CELL_ERRORS))}</h2><ul>{items}</ul><p>{e(t(M.CELL_ERRORS_WHY))}</p>")
    return _page(f"{lab.lab}: {res.student}", "\n".join(parts), t)


def manual_html(lab: Lab, gid: str, results: list[Result], manual: dict, t: Translator = EN) -> str:
    e = html.escape
    item = lab.spec.item(gid)
    parts = [
        f"<h1>{e(t(M.MANUAL_TITLE, lab=lab.lab, grade_id=gid, points=f'{float(item.points):g}'))}</h1>",
        f'<h2>{e(t(M.QUESTION))}</h2><div class="question">{e(_question(lab, gid, t))}</div>',
        f"<p>{t(M.MANUAL_HOW)}</p>",  # our own HTML (file names in <code>)
        f"<h2>{e(t(M.ANSWERS))}</h2><table><tr><th>{e(t(M.STUDENT))}</th><th>{e(t(M.ANSWER))}</th>"
        f"<th>{e(t(M.ENTERED))}</th></tr>",
    ]
    for res in results:
        ans = res.answers.get(gid)
        text = t(M.NO_ANSWER_FOUND) if ans is None else ans.strip() or t(M.EMPTY_ANSWER)
        if text.strip() == "YOUR ANSWER HERE":
            text = t(M.NOT_ANSWERED)
        got = manual.get(res.student, {}).get(gid)
        parts.append(
            f'<tr><td>{e(res.student)}</td><td><div class="answer">{e(text)}</div></td>'
            f"<td>{'' if got is None else f'{got:g}'}</td></tr>"
        )
    parts.append("</table>")
    return _page(f"{lab.lab}: {gid}", "\n".join(parts), t)


def _question(lab: Lab, gid: str, t: Translator) -> str:
    """The question as the students of that language read it: from their edition of the lab
    (``labs/zh/<lab>/``), else the English one."""
    home = lab.course
    edition = home / EDITIONS[t.lang][0] / lab.lab / f"{lab.lab}.ipynb" if t.lang in EDITIONS and home else None
    if t.lang != "en" and edition is not None and edition.is_file():
        translated = questions(json.loads(edition.read_text(encoding="utf-8"))).get(gid)
        if translated:
            return translated
    return lab.prompts.get(gid, "")


def summary_html(lab: Lab, results: list[Result], run: dict, manual: dict, t: Translator = EN) -> str:
    e = html.escape
    n = len(results)
    statuses = Counter(r.status for r in results)
    sandbox = run["sandbox"] if run["sandbox"] != "none" else t(M.NO_SANDBOX)
    counts = ", ".join(t(M.STATUS_COUNT, status=t.status(k), count=v) for k, v in sorted(statuses.items()))
    head = [M.ITEM, M.POINTS_HEADER, M.FULL_MARKS, M.MEAN, M.COMMON_FAILURE]
    parts = [
        f"<h1>{e(t(M.SUMMARY_TITLE, lab=lab.lab))}</h1>",
        f"<p>{e(t(M.SUMMARY_RUN, n=n, seed=run['seed'], sandbox=sandbox))} {e(counts)}</p>",
        f"<h2>{e(t(M.PER_ITEM))}</h2><table><tr>{''.join(f'<th>{e(t(h))}</th>' for h in head)}</tr>",
    ]
    for gid in lab.order:
        item = lab.spec.item(gid)
        if gid in {m.grade_id for m in lab.spec.manual}:
            entered = [manual[s][gid] for s in manual if gid in manual[s]]
            mean = f"{sum(entered) / len(entered):.2f}" if entered else "–"
            parts.append(
                f"<tr><td>{e(t(M.ITEM_BY_HAND, grade_id=gid))}</td><td>{float(item.points):g}</td>"
                f"<td>{e(t(M.N_ENTERED, n=len(entered)))}</td><td>{mean}</td><td></td></tr>"
            )
            continue
        pts = [r.items[gid].points if gid in r.items else 0.0 for r in results]
        full = sum(p == float(item.points) for p in pts)
        reasons: Counter[str] = Counter()
        for r in results:
            if gid in r.items and r.items[gid].points < r.items[gid].max:
                lines = r.items[gid].lines
                reasons[t.say(_reason(lines[1] if len(lines) > 1 else lines[0]))[:120]] += 1
        common = reasons.most_common(1)[0] if reasons else None
        parts.append(
            f"<tr><td><code>{e(gid)}</code></td><td>{float(item.points):g}</td><td>{full} / {n}</td>"
            f"<td>{(sum(pts) / n if n else 0):.2f}</td><td>{e(common[0]) + f' ({common[1]})' if common else ''}</td></tr>"
        )
    parts.append(
        f"</table><h2>{e(t(M.TOTALS))}</h2><table><tr><th>{e(t(M.STUDENT))}</th><th>{e(t(M.TOTAL))}</th>"
        f"<th>{e(t(M.STATUS_HEADER))}</th></tr>"
    )
    for r in results:
        total, maximum = totals(r, lab, manual.get(r.student, {}))
        parts.append(
            f"<tr><td>{e(r.student)}</td><td>{total:g} / {maximum:g}</td><td>{e(t.status(r.status))}</td></tr>"
        )
    parts.append("</table>")
    return _page(t(M.SUMMARY_PAGE_TITLE, lab=lab.lab), "\n".join(parts), t)


def _reason(line: Msg) -> Param:
    """What a failing item's line says went wrong, without the check it names (``check 2 (a vector): your
    function raised ...`` -> ``your function raised ...``)."""
    said = line.params
    return (
        said.get("why", said.get("reason", line))
        if line.t in (M.CHECK_FAILED.name, M.EVERY_CHECK.name, M.ZERO_POINTS.name)
        else line
    )


def _file_name(student: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.@ " or ord(c) > 127 else "_" for c in student).strip(". ")
    if safe != student:  # two names that differ only in replaced characters must not share a file
        safe = f"{safe or '_'}-{hashlib.sha256(student.encode()).hexdigest()[:8]}"
    return safe


def write_all(out: Path, lab: Lab, results: list[Result], run: dict, lang: str = "en") -> None:
    t = translator(lang)
    manual = manual_scores(out, lab)
    write_csv(out, lab, results, manual)
    for res in results:
        write_atomic(
            out / "feedback" / f"{_file_name(res.student)}.html",
            feedback_html(res, lab, manual.get(res.student, {}), t),
        )
    for m in lab.spec.manual:
        write_atomic(out / "manual" / f"{m.grade_id}.html", manual_html(lab, m.grade_id, results, manual, t))
    write_atomic(out / "summary.html", summary_html(lab, results, run, manual, t))


def gradescope_json(res: Result, lab: Lab, note: str = "", t: Translator = EN) -> str:
    """Gradescope's results.json for one submission (autograded items; written answers are graded there by hand)."""
    tests: list[dict[str, Any]] = []
    for gid in lab.order:
        if gid not in res.items:
            continue
        r = res.items[gid]
        tests.append(
            {
                "name": gid,
                "score": r.points,
                "max_score": r.max,
                "output": "\n".join(t(line) for line in r.lines),
                "status": "passed" if r.points == r.max else "failed",
                "visibility": "visible",
            }
        )
    status = t.status(res.status)
    out = [t(M.GS_STATUS_WITH_NOTE, status=status, note=t(res.note)) if res.note else t(M.GS_STATUS, status=status)]
    if res.cell_errors:
        out += [t(M.GS_CELL_ERRORS), *(t(c) for c in res.cell_errors)]
    if lab.spec.manual:
        out.append(t(M.GS_BY_HAND, grade_ids=", ".join(m.grade_id for m in lab.spec.manual)))
    if note:
        out.append(note)
    total = sum(test["score"] for test in tests)
    return json.dumps({"score": total, "output": "\n".join(out), "tests": tests, "visibility": "visible"}, indent=1)
