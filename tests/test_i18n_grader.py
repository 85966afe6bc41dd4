"""The grader's words in Chinese (`qkv grade --lang zh`): a complete, current catalog, and pages without English.

The catalog is `locales/zh_CN/LC_MESSAGES/grader.po`, compiled into the package's `qkv_grade.mo` by
`tools/i18n.py grader` (qkv.grading.messages). These tests fail when a message the grader can show (a template,
a status word, a spec's description, title or case label) has no current translation, when the compiled
catalog is older than the .po, and when a page rendered in Chinese still has an English sentence.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from english_left import english_left
from i18n_tool import TOOL

from qkv import i18n
from qkv.grading import messages as M
from qkv.grading import reports, specs
from qkv.grading.catalog import catalog_messages
from qkv.grading.lab import load_lab
from qkv.grading.results import ItemResult, Result
from qkv.grading.spec import Item, item_generator, load_spec

ROOT = Path(__file__).resolve().parents[1]


CATALOG = i18n.load_catalog(i18n.catalog_path(ROOT, "zh_CN", TOOL.GRADER))
LABS = [m.name for m in pkgutil.iter_modules(specs.__path__) if m.name != "contracts"]


def test_every_grader_message_has_a_current_translation():
    """Every template, status word and spec text is in the catalog, translated, not fuzzy, placeholders kept."""
    wanted = catalog_messages()
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


def _messages() -> list[M.Msg]:
    """The lines of :func:`_lines` as the grader makes them: messages, rendered only by a report."""
    where = M.VALUE_OF(n=2, where=M.THE_RESULT())
    return [
        M.FAILED_SOME(failed=2, checks=M.CHECKS(n=5)),
        M.CHECK_FAILED(
            what=M.CHECK_LABELLED(n=2, label=M.Known("a matrix (3, 5): normalise each row")),
            why=M.WRONG_VALUES(where=where, bad=3, size=15, largest="0.5"),
        ),
        M.CHECK_FAILED(what=M.CHECK(n=3), why=M.WRONG_SHAPE(where=where, got="(2, 3)", expected="(3, 3)")),
        M.EVERY_CHECK(why=M.NOT_WRITTEN()),
        M.ZERO_POINTS(reason=M.USES_FORBIDDEN(names="torch.softmax, torch.nn.Softmax")),
        M.PASSED_ALL(checks=M.ONE_CHECK(n=1)),
        M.CHECK_FAILED(
            what=M.CHECK_LABELLED(n=4, label=M.Known("scores of +-1e4 (overflow and underflow)")),
            why=M.CALL_TOO_SLOW(why=M.RAN_PAST(functions=(M.FUNCTION_IN_CELL(function="softmax", cell=3),))),
        ),
        M.CHECK_FAILED(what=M.CHECK(n=1), why=M.RAISED(error=M.WANT_PYTHON_FLOAT(got="int"))),
        M.SLOW_STOPPED(functions=(M.FUNCTION_IN_CELL(function="f", cell=4), "g")),
        M.STILL_RUNNING_AT(cell=7),
    ]


def test_messages_render_in_either_language():
    """The grader keeps messages; a report renders each in its language: what the templates give, filled in."""
    en, zh = M.translator("en"), M.translator("zh")
    for msg, english, chinese in zip(_messages(), _lines(en), _lines(zh), strict=True):
        assert en(msg) == str(msg) == english
        assert zh(msg) == chinese.replace(", g", "、g"), english
        assert M.Msg.from_json(msg.to_json()) == msg  # as cached
    # A student's own words (an exception's message) stay as they are, colons and all.
    line = M.CHECK_FAILED(what=M.CHECK(n=3), why=M.RAISED(error="ValueError: oops: bad"))
    assert zh(line) == zh(M.CHECK_FAILED, what=zh(M.CHECK, n=3), why=zh(M.RAISED, error="ValueError: oops: bad"))
    assert zh.text("something the grader never says") == "something the grader never says"
    assert en(line) == en(M.CHECK_FAILED, what=en(M.CHECK, n=3), why=en(M.RAISED, error="ValueError: oops: bad"))


def test_a_wrong_entry_of_a_returned_tuple_reads_naturally_in_chinese():
    """A function returning a tuple: the grader names the entry of the return value (review of issue 22:
    「结果的第 1 个值」 read badly), and the nesting reads outside in."""
    compare = importlib.import_module("qkv.grading.compare").compare
    import numpy as np

    said = compare([np.zeros(2), np.zeros(3)], [np.zeros(2), np.zeros((3, 1))], 1e-6, 1e-6)
    english = str(said)
    assert english == "value 2 of the result has shape (3,); expected (3, 1)"
    chinese = M.translator("zh")(said)
    assert chinese == "返回值中的第 2 项的形状是 (3,)；应为 (3, 1)", chinese
    assert "个值" not in chinese


# ---------------------------------------------------------------------------------------------- pages


def _feedback(t: M.Translator, lab, result: Result) -> str:
    return reports.feedback_html(result, lab, {}, t)


def _summary(t: M.Translator, lab, result: Result) -> str:
    return reports.summary_html(lab, [result], {"seed": 42, "sandbox": "none"}, {}, t)


@pytest.mark.parametrize("render", [_feedback, _summary])
def test_a_page_in_chinese_has_no_english_sentence(render):
    lab = load_lab("soft_lookup", ROOT)
    spec = lab.spec
    en = M.translator("en")
    result = Result(
        "ada",
        "graded",
        M.SLOW_STOPPED(functions=(M.FUNCTION_IN_CELL(function="lookup", cell=9),)),
        items={
            item.grade_id: ItemResult(0.0, float(item.points), _messages()[: 3 + n])
            for n, item in enumerate(spec.autograded)
        },
        cell_errors=[M.CELL_ERROR(cell=3, error="NameError: name 'x' is not defined")],
    )
    english, chinese = render(en, lab, result), render(M.translator("zh"), lab, result)
    assert '<html lang="zh-CN">' in chinese
    assert len(english_left(english)) >= 3  # the detector sees English where there is some
    assert english_left(chinese) == []


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
