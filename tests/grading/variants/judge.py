"""What a fair teacher expects of a variant's result, and where a result differs from it."""

from __future__ import annotations

import re

from qkv.grading.testing import english, english_lines

# Feedback on correct work names no error: no exception, no forbidden call, no time limit.
ERROR_WORDS = re.compile(r"\b\w*(Error|Exception|ForbiddenCall)\b|not allowed|forbids|time limit|not found", re.I)


def problems(variant, result) -> list[str]:
    """The ways ``result`` (the grader's, for ``variant``'s notebook) differs from a fair teacher's: full marks
    and feedback without an error for a correct variant; exactly the planted bug's items lost for a bug."""
    if result.status != "graded":
        return [f"status {result.status} ({english(result.note)})"]
    lost = {gid for gid, r in result.items.items() if r.points < r.max}
    out = []
    if lost != variant.lose:
        lines = {gid: "; ".join(english_lines(result.items[gid].lines))[:240] for gid in sorted(lost ^ variant.lose)}
        out.append(f"lost {sorted(lost)}, expected {sorted(variant.lose)}: {lines}")
    if not variant.bug:
        out += [f"cell error in the feedback: {e[:240]}" for e in english_lines(result.cell_errors)]
        out += [
            f"{gid}: {line[:240]}"
            for gid, r in result.items.items()
            for line in english_lines(r.lines)
            if ERROR_WORDS.search(line)
        ]
        if ERROR_WORDS.search(english(result.note)):
            out.append(f"note: {english(result.note)[:240]}")
    return out
