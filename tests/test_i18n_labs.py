"""The Chinese labs (labs/zh/): the English labs' twins, translated from the catalogs, graded the same way.

`qkv labs --check` (tests/test_notebooks.py) covers both editions byte for byte; here: the twins differ only in
Markdown and the messages of their code (string literals), nbgrader accepts the translated solution, and `qkv grade` gives the same totals to the same answers.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from english_left import SENTENCE

from qkv import labs
from qkv.grading.testing import grade_across_labs, points

ROOT = Path(__file__).resolve().parents[1]
LABS = labs.lab_ids(ROOT)
TRANSLATED = "soft_lookup"  # the lab translated in full so far


def _nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("lab", LABS)
def test_chinese_lab_is_the_english_lab_with_translated_markdown(lab):
    en = _nb(ROOT / "labs" / lab / f"{lab}.ipynb")
    zh = _nb(ROOT / "labs" / "zh" / lab / f"{lab}.ipynb")
    assert [c["id"] for c in zh["cells"]] == [c["id"] for c in en["cells"]]
    assert [c["cell_type"] for c in zh["cells"]] == [c["cell_type"] for c in en["cells"]]
    for a, b in zip(en["cells"], zh["cells"]):
        meta_a, meta_b = json.loads(json.dumps(a["metadata"])), json.loads(json.dumps(b["metadata"]))
        if a["source"] != b["source"]:  # nbgrader's checksum covers the text, which is translated
            meta_a.get("nbgrader", {}).pop("checksum", None)
            meta_b.get("nbgrader", {}).pop("checksum", None)
        assert meta_b == meta_a, f"cell {a['id']}: metadata (grade id, points, tags) differ"
        if a["cell_type"] == "code":  # only its messages are translated: the same tokens but for the strings
            assert _code_tokens(b["source"]) == _code_tokens(a["source"]), f"cell {a['id']}: code differs"
    assert zh["metadata"].get("language") == "zh-CN"


def _code_tokens(source) -> list[str]:
    """A cell's Python tokens, each run of adjacent string literals (Python joins them) as one "<str>"."""
    out: list[str] = []
    text = "".join(source)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NL, tokenize.COMMENT):
            continue
        if tok.type == tokenize.STRING:
            if out[-1:] != ["<str>"]:
                out.append("<str>")
        else:
            out.append(tok.string)
    return out


def _code_strings(path: Path) -> list[tuple[str, str]]:
    """(cell id, the value of each string literal) of a lab's code cells that a student reads."""
    found = []
    for cell in _nb(path)["cells"]:
        if cell["cell_type"] == "code" and "remove-cell" not in cell["metadata"].get("tags", []):
            for tok in tokenize.generate_tokens(io.StringIO("".join(cell["source"])).readline):
                if tok.type == tokenize.STRING:
                    found.append((cell["id"], tok.string))
    return found


# English a Chinese lab keeps on purpose: text drawn into figures (the figures' labels and their CJK font are
# another piece of work).
FIGURE_TEXT = {
    "number of layers",
    "inputs reaching the middle output",
    "tokens changed from here on",
    "max |change of out_i|",
    "Changing the future",
    "after {step} training steps: test accuracy {acc:.2f}",
}


@pytest.mark.parametrize("lab", LABS)
def test_the_chinese_labs_code_speaks_chinese(lab):
    """No English sentence in the Chinese lab's code (self-check messages, hints, docstrings), and the setup cell
    sets qkv.selfcheck's words to Chinese. Counted in both editions, to show what was translated."""
    en, zh = (
        _code_strings(ROOT / "labs" / lab / f"{lab}.ipynb"),
        _code_strings(ROOT / "labs" / "zh" / lab / f"{lab}.ipynb"),
    )
    sentences = lambda strings: [
        (c, s) for c, s in strings if SENTENCE.search(s) and s.strip("f\"'") not in FIGURE_TEXT
    ]
    assert sentences(en), "the English lab has messages (else this test checks nothing)"
    assert not sentences(zh), sentences(zh)[:5]
    assert sum(bool(re.search(r"[\u4e00-\u9fff]", s)) for _, s in zh) >= len(sentences(en))
    assert any(s == '"zh_CN"' for _, s in zh) and not any(s == '"zh_CN"' for _, s in en)


def test_the_translated_lab_is_in_chinese():
    en = _nb(ROOT / "labs" / TRANSLATED / f"{TRANSLATED}.ipynb")
    zh = _nb(ROOT / "labs" / "zh" / TRANSLATED / f"{TRANSLATED}.ipynb")
    md = [(a, b) for a, b in zip(en["cells"], zh["cells"]) if a["cell_type"] == "markdown"]
    changed = [b for a, b in md if a["source"] != b["source"]]
    assert len(changed) == len([a for a, _ in md if "YOUR ANSWER HERE" not in "".join(a["source"])])
    text = "".join("".join(b["source"]) for _, b in md)
    assert "练习 1：点积分数（2 分）" in text and "<summary>提示</summary>" in text
    assert "YOUR ANSWER HERE" in text  # the stub the grader looks for stays


def test_nbgrader_validates_the_translated_solution(tmp_path):
    """nbgrader's own `validate` runs the Chinese solution and finds every test passing."""
    labs.translated_solutions(ROOT, [TRANSLATED], "zh", tmp_path)
    nb = tmp_path / TRANSLATED / f"{TRANSLATED}.ipynb"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", "validate", str(nb)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0 and "Success! Your notebook passes all the tests." in done.stdout, (
        done.stdout[-2000:] + done.stderr[-2000:]
    )


def test_same_answers_same_totals_in_both_languages(tmp_path):
    """The English and the Chinese solution of every lab, and both blank labs, graded by the same `qkv grade`."""
    solutions = tmp_path / "zh-solutions"
    labs.translated_solutions(ROOT, LABS, "zh", solutions)
    batch = []
    for lab in LABS:
        batch += [
            (lab, "en-solution", (ROOT / "solutions" / lab / f"{lab}.ipynb").read_bytes()),
            (lab, "zh-solution", (solutions / lab / f"{lab}.ipynb").read_bytes()),
            (lab, "en-blank", (ROOT / "labs" / lab / f"{lab}.ipynb").read_bytes()),
            (lab, "zh-blank", (ROOT / "labs" / "zh" / lab / f"{lab}.ipynb").read_bytes()),
        ]
    results = grade_across_labs(batch, tmp_path / "grade")
    for lab in LABS:
        items = {who: points(results[(lab, who)]) for who in ("en-solution", "zh-solution", "en-blank", "zh-blank")}
        total = {who: sum(p.values()) for who, p in items.items()}
        assert items["zh-solution"] == items["en-solution"] and total["en-solution"] > 0, (lab, total)
        assert items["zh-blank"] == items["en-blank"] and total["en-blank"] < total["en-solution"], (lab, total)


@pytest.mark.parametrize("edition", ["labs", "labs/zh"])
def test_relative_links_in_the_labs_resolve_where_students_open_them(edition):
    import re

    broken = []
    for lab in LABS:
        path = ROOT / edition / lab / f"{lab}.ipynb"
        for cell in _nb(path)["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for target in re.findall(r"\]\(([^)#\s]+)", "".join(cell["source"])):
                if "://" not in target and not (path.parent / target).exists():
                    broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert not broken, broken


@pytest.mark.parametrize("lab", LABS)
def test_the_grader_knows_the_chinese_labs_cells_as_the_courses(lab):
    """Every code cell of the Chinese lab, as released, is one of the course's own for the grader (not the
    student's), like the English lab's: its translated messages do not make a test cell look edited."""
    from qkv.grading.lab import load_lab

    released = load_lab(lab, ROOT).released
    for edition in ("labs", "labs/zh"):
        cells = _nb(ROOT / edition / lab / f"{lab}.ipynb")["cells"]
        code = ["".join(c["source"]).strip() for c in cells if c["cell_type"] == "code"]
        assert [src[:60] for src in code if src and src not in released] == [], edition
