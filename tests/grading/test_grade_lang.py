"""`qkv grade --lang zh`, `qkv check --lang zh` and a Chinese Gradescope bundle, as an instructor and a student
of the Chinese edition meet them: every page and line in Chinese (Python's own exception messages aside), the
same grades, and one cache for both languages."""

from __future__ import annotations

import csv
import json
import zipfile

from english_left import english_left

from qkv.cli import main
from qkv.grading.gradescope import build_bundle
from qkv.grading.testing import COURSE, solution_notebook

BLANK_ZH = (COURSE / "labs/zh/soft_lookup/soft_lookup.ipynb").read_bytes()


def _class(folder):
    """A solution, the Chinese lab handed in blank, and a solution with an unrelated failing cell."""
    folder.mkdir()
    nb = solution_notebook("soft_lookup")
    (folder / "ada.ipynb").write_text(json.dumps(nb))
    (folder / "bo.ipynb").write_bytes(BLANK_ZH)
    scratch = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "print(y)"}
    nb["cells"].append(scratch)
    (folder / "chen.ipynb").write_text(json.dumps(nb))
    return folder


def _grades(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        return [(r["student"], r["total"], r["status"]) for r in csv.DictReader(f)]


def test_a_class_graded_in_chinese_then_in_english_from_the_cache(tmp_path, capsys):
    subs, out = _class(tmp_path / "subs"), tmp_path / "out"
    args = ["grade", "soft_lookup", str(subs), "--out", str(out), "--course", str(COURSE), "--jobs", "2"]
    assert main([*args, "--lang", "zh"]) == 0
    pages = [*sorted((out / "feedback").glob("*.html")), out / "summary.html", *(out / "manual").glob("*.html")]
    assert len(pages) == 3 + 1 + 1  # three students, the summary, the written question
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert '<html lang="zh-CN">' in text, page.name
        assert english_left(text) == [], page.name
    feedback = {p.stem: p.read_text(encoding="utf-8") for p in (out / "feedback").glob("*.html")}
    assert "NameError" in feedback["chen"] and "单元" in feedback["chen"]  # the scratch cell, named in Chinese
    assert "反馈" in feedback["ada"] and "10 / 10" in feedback["ada"]
    zh_grades = _grades(out)
    capsys.readouterr()
    assert main([*args, "--lang", "en"]) == 0  # the same results, from the cache, written in English
    assert "3 already graded, 0 to grade" in capsys.readouterr().out
    assert _grades(out) == zh_grades
    english = (out / "feedback" / "chen.html").read_text(encoding="utf-8")
    assert '<html lang="en">' in english and "Cells that raised an error" in english


def test_a_student_checks_in_chinese(tmp_path, capsys):
    nb = tmp_path / "soft_lookup.ipynb"
    nb.write_bytes(BLANK_ZH)
    assert main(["check", "soft_lookup", str(nb), "--course", str(COURSE), "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "总计：0 / 10 分（自动评分）" in out, out
    assert english_left(out) == [], out


def test_a_chinese_gradescope_bundle_and_results(tmp_path, capsys):
    out = tmp_path / "results"
    nb = tmp_path / "soft_lookup.ipynb"
    nb.write_bytes(BLANK_ZH)
    args = ["grade", "soft_lookup", str(nb), "--out", str(out), "--course", str(COURSE), "--gradescope"]
    assert main([*args, "--lang", "zh"]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    texts = [results["output"], *(t["output"] for t in results["tests"])]
    assert results["score"] == 0 and "状态" in results["output"]
    assert [line for text in texts for line in english_left(text)] == []
    with zipfile.ZipFile(build_bundle("soft_lookup", COURSE, tmp_path / "b.zip", lang="zh")) as zf:
        run = zf.read("run_autograder").decode()
    assert "--lang zh" in run
    fallback = next(line for line in run.splitlines() if line.strip().startswith("echo '{"))
    assert english_left(fallback) == [] and "自动评分器" in fallback
