"""The grader's words in Chinese (`qkv grade --lang zh`): a complete, current catalog, and pages without English.

The catalog is `locales/zh_CN/LC_MESSAGES/grader.po`, compiled into the package's `qkv_grade.mo` by
`tools/i18n.py grader` (qkv.grading.messages). These tests fail when a message the grader can show (a template,
a status word, a spec's description, title or case label) has no current translation, when the compiled
catalog is older than the .po, and when a page rendered in Chinese still has an English sentence.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo

from qkv import i18n
from qkv.grading import messages as M
from qkv.grading import specs
from qkv.grading.spec import Item, item_generator, load_spec

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "tools" / "i18n.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
CATALOG = i18n.load_catalog(i18n.catalog_path(ROOT, "zh_CN", TOOL.GRADER))
LABS = [m.name for m in pkgutil.iter_modules(specs.__path__) if m.name != "contracts"]


def test_every_grader_message_has_a_current_translation():
    """Every template, status word and spec text is in the catalog, translated, not fuzzy, placeholders kept."""
    wanted = M.catalog_messages()
    assert len(wanted) > len(M.TEMPLATES) + len(M.STATUS_WORDS)  # the specs' texts are in it too
    missing = [text for text in wanted if CATALOG.get(text) is None]
    assert not missing, f"not in the catalog (run `python tools/i18n.py grader`): {missing[:5]}"
    fuzzy = [text for text in wanted if CATALOG.get(text).fuzzy]
    untranslated = [text for text in wanted if not CATALOG.get(text).string]
    assert not fuzzy and not untranslated, f"fuzzy: {fuzzy[:5]}; untranslated: {untranslated[:5]}"
    broken = {text: TOOL.grader_broken(text, CATALOG.get(text).string) for text in wanted}
    assert not {t: b for t, b in broken.items() if b}


@pytest.mark.parametrize("lab", LABS)
def test_each_spec_text_has_an_entry(lab):
    """Descriptions, titles and case labels of every item; labels drawn with another seed than extraction's
    (a label that shows a drawn value would differ, and have no entry)."""
    for item in load_spec(lab).items:
        texts = [item.title]
        if isinstance(item, Item):
            texts += [item.describe] + [c.label for c in item.cases(item_generator(12345, item.grade_id))]
        for text in filter(None, texts):
            msg = CATALOG.get(text)
            assert msg is not None and msg.string and not msg.fuzzy, (lab, item.grade_id, text)


def test_the_compiled_catalog_is_the_po():
    assert TOOL.grader_stale() == ""
    assert M.translator("zh")(M.THE_RESULT) == CATALOG.get(M.THE_RESULT).string != M.THE_RESULT


def test_the_status_words_are_the_reports():
    reports = importlib.import_module("qkv.grading.reports")
    assert reports.STATUS_WORDS == M.STATUS_WORDS


def test_a_changed_message_goes_fuzzy_and_shows_in_english(tmp_path):
    """The mechanism: edit an English template, merge, compile: the old translation is kept but not used."""
    old = Catalog(locale="zh_CN")
    old.add("passed all {checks}", "通过了全部 {checks}")
    old.add("the result", "结果")
    template = Catalog()
    template.add("passed every one of the {checks}")  # edited
    template.add("the result")
    merged = TOOL.merge(old, template)
    assert merged.get("passed every one of the {checks}").fuzzy
    (tmp_path / "zh_CN" / "LC_MESSAGES").mkdir(parents=True)
    with open(tmp_path / "zh_CN" / "LC_MESSAGES" / f"{M.DOMAIN}.mo", "wb") as f:
        write_mo(f, merged, use_fuzzy=False)
    t = M.Translator("zh", locale_dir=tmp_path)
    assert t("passed every one of the {checks}", checks="3") == "passed every one of the 3"
    assert t("the result") == "结果"


def test_placeholders_and_tags_must_survive_translation():
    assert TOOL.grader_broken("check {n} ({label})", "第 {n} 项检查（{label}）") == []
    assert TOOL.grader_broken("check {n} ({label})", "第 {n} 项检查") != []
    assert TOOL.grader_broken("in <code>grades.csv</code>", "在 grades.csv 里") == ["HTML tags differ"]


def test_unknown_language():
    with pytest.raises(ValueError, match="'fr'"):
        M.translator("fr")


def _lines(t: M.Translator) -> list[str]:
    """Feedback lines and notes as the grader builds them, from the templates, in the translator's language."""
    where = t(M.VALUE_OF, n=2, where=t(M.THE_RESULT))
    return [
        t(M.FAILED_SOME, failed=2, checks=t(M.CHECKS, n=5)),
        t(
            M.CHECK_FAILED,
            what=t(M.CHECK_LABELLED, n=2, label=t("a matrix (3, 5): normalise each row")),
            why=t(M.WRONG_VALUES, where=where, bad=3, size=15, largest="0.5"),
        ),
        t(M.CHECK_FAILED, what=t(M.CHECK, n=3), why=t(M.WRONG_SHAPE, where=where, got="(2, 3)", expected="(3, 3)")),
        t(M.EVERY_CHECK, why=t(M.NOT_WRITTEN)),
        t(M.ZERO_POINTS, reason=t(M.USES_FORBIDDEN, names="torch.softmax, torch.nn.Softmax")),
        t(M.PASSED_ALL, checks=t(M.ONE_CHECK, n=1)),
        t(
            M.CHECK_FAILED,
            what=t(M.CHECK_LABELLED, n=4, label=t("scores of +-1e4 (overflow and underflow)")),
            why=t(M.CALL_TOO_SLOW, why=t(M.RAN_PAST, functions=t(M.FUNCTION_IN_CELL, function="softmax", cell=3))),
        ),
        t(M.CHECK_FAILED, what=t(M.CHECK, n=1), why=t(M.RAISED, error=t(M.WANT_PYTHON_FLOAT, got="int"))),
        t(M.SLOW_STOPPED, functions=", ".join([t(M.FUNCTION_IN_CELL, function="f", cell=4), "g"])),
        t(M.STILL_RUNNING_AT, cell=7),
    ]


def test_finished_english_lines_read_back_into_chinese():
    """The grader caches its lines in English; `text` turns each into what the templates give in Chinese."""
    en, zh = M.translator("en"), M.translator("zh")
    for english, chinese in zip(_lines(en), _lines(zh)):
        assert zh.text(english) == chinese.replace(", g", "、g"), english
    # A student's own words (an exception's message) stay as they are, colons and all.
    line = en(M.CHECK_FAILED, what=en(M.CHECK, n=3), why=en(M.RAISED, error="ValueError: oops: bad"))
    assert zh.text(line) == zh(M.CHECK_FAILED, what=zh(M.CHECK, n=3), why=zh(M.RAISED, error="ValueError: oops: bad"))
    assert zh.text("something the grader never says") == "something the grader never says"
    assert en.text(line) == line


# ---------------------------------------------------------------------------------------------- pages
ENGLISH_SENTENCE = re.compile(r"[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}")  # three English words


def _feedback(t: M.Translator, spec, result: dict) -> str:
    """A feedback page built from the messages alone, as reports.feedback_html lays it out."""
    e = html.escape
    rows = []
    for item in spec.items:
        name = item.title or getattr(item, "function", "") or item.grade_id
        if item.grade_id in result["items"]:
            r = result["items"][item.grade_id]
            lines = "".join(f"<li>{e(t.text(line))}</li>" for line in r["lines"])
            rows.append(
                f"<tr><td><code>{e(name)}</code><br><small>{e(t(item.describe))}</small></td>"
                f"<td>{r['points']:g} / {r['max']:g}</td><td><ul>{lines}</ul></td></tr>"
            )
        else:
            rows.append(f"<tr><td>{e(t(name))}</td><td>– / {item.points:g}</td><td>{e(t(M.BY_HAND_NOT_YET))}</td></tr>")
    errors = "".join(f"<li><code>{e(t.text(c))}</code></li>" for c in result["cell_errors"])
    body = [
        f"<h1>{e(t(M.FEEDBACK_TITLE, lab=spec.lab, student=result['student']))}</h1>",
        f"<p><strong>{e(t(M.POINTS, total=7, maximum=10))}</strong> {e(t(M.AUTOGRADED))}"
        f" {e(t(M.STATUS_WITH_NOTE, status=t.status(result['status']), note=t.text(result['note'])))}</p>",
        f"<p>{e(t(M.NOT_GRADABLE))}</p>",
        f"<table><tr><th>{e(t(M.EXERCISE))}</th><th>{e(t(M.POINTS_HEADER))}</th><th>{e(t(M.FOUND))}</th></tr>",
        *rows,
        f"</table><h2>{e(t(M.CELL_ERRORS))}</h2><ul>{errors}</ul><p>{e(t(M.CELL_ERRORS_WHY))}</p>",
    ]
    return _page(t, "\n".join(body))


def _summary(t: M.Translator, spec, result: dict) -> str:
    e = html.escape
    head = [M.ITEM, M.POINTS_HEADER, M.FULL_MARKS, M.MEAN, M.COMMON_FAILURE]
    body = [
        f"<h1>{e(t(M.SUMMARY_TITLE, lab=spec.lab))}</h1>",
        f"<p>{e(t(M.SUMMARY_RUN, n=1, seed=42, sandbox=t(M.NO_SANDBOX)))} "
        f"{e(t(M.STATUS_COUNT, status=t.status(result['status']), count=1))}</p>",
        f"<h2>{e(t(M.PER_ITEM))}</h2><table><tr>{''.join(f'<th>{e(t(h))}</th>' for h in head)}</tr>",
        f"<tr><td>{e(t(M.ITEM_BY_HAND, grade_id=spec.manual[0].grade_id))}</td><td>2</td>"
        f"<td>{e(t(M.N_ENTERED, n=0))}</td><td>–</td><td></td></tr>",
        f"</table><h2>{e(t(M.TOTALS))}</h2><table><tr><th>{e(t(M.STUDENT))}</th><th>{e(t(M.TOTAL))}</th>"
        f"<th>{e(t(M.STATUS_HEADER))}</th></tr></table>",
    ]
    return _page(t, "\n".join(body))


def _page(t: M.Translator, body: str) -> str:
    return f'<!DOCTYPE html>\n<html lang="{t.html_lang}"><head><meta charset="utf-8"></head><body>{body}</body></html>'


def _english_left(page: str) -> list[str]:
    text = re.sub(r"<code>.*?</code>|<[^>]+>", " ", page)
    return ENGLISH_SENTENCE.findall(html.unescape(text))


@pytest.mark.parametrize("render", [_feedback, _summary])
def test_a_page_in_chinese_has_no_english_sentence(render):
    spec = load_spec("soft_lookup")
    en = M.translator("en")
    result = {
        "student": "ada",
        "status": "graded",
        "note": en(M.SLOW_STOPPED, functions=en(M.FUNCTION_IN_CELL, function="lookup", cell=9)),
        "items": {
            item.grade_id: {"points": 0.0, "max": float(item.points), "lines": _lines(en)[: 3 + n]}
            for n, item in enumerate(spec.autograded)
        },
        "cell_errors": [en(M.CELL_ERROR, cell=3, error="NameError: name 'x' is not defined")],
    }
    english, chinese = render(en, spec, result), render(M.translator("zh"), spec, result)
    assert '<html lang="zh-CN">' in chinese
    assert len(_english_left(english)) >= 3  # the detector sees English where there is some
    assert _english_left(chinese) == []


def test_the_wheel_and_the_gradescope_bundle_carry_the_compiled_catalog(tmp_path):
    from qkv.grading.gradescope import build_bundle

    mo = f"qkv/grading/locale/zh_CN/LC_MESSAGES/{M.DOMAIN}.mo"
    with zipfile.ZipFile(build_bundle("soft_lookup", ROOT, tmp_path / "bundle.zip")) as zf:
        assert f"qkv-src/src/{mo}" in zf.namelist()
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("qkv-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert mo in zf.namelist()
        assert not [n for n in zf.namelist() if n.endswith(".po")]  # translators' files stay in the repository
