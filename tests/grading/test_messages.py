"""The grader's words have one source: every feedback line, note and cell error is a message made from a template
of ``qkv.grading.messages``, every template is used, and every template has a Chinese translation. Fast: no
sandbox, no grading.

The types do the rest: a result's lines, notes and cell errors are typed as messages (``results.py``), so mypy
(``make check``) rejects a line built as a plain string."""

from __future__ import annotations

import ast
import string
import typing
from pathlib import Path

import pytest

from qkv.grading import messages as M
from qkv.grading import results, submissions
from qkv.grading.words import BY_NAME

PACKAGE = Path(M.__file__).parent
SOURCES = [p for p in sorted(PACKAGE.rglob("*.py")) if p.name not in ("messages.py", "words.py")]
SOURCES.append(PACKAGE.parent / "check.py")  # `qkv check` prints the grader's words too


def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in SOURCES}


def test_every_template_is_used_by_the_grader():
    """Each template is named by some module of the grader (a message made, a page's word); none is kept only
    for the catalog."""
    named = set()
    for tree in _trees().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                named.add(node.id)
            elif isinstance(node, ast.Attribute):
                named.add(node.attr)
            elif isinstance(node, ast.alias):
                named.add(node.name)
    unused = sorted(set(BY_NAME) - named)
    assert not unused, f"templates no code uses (delete them, then run tools/i18n.py grader): {unused}"


def test_each_template_is_defined_once_under_its_name():
    assert len(BY_NAME) == len(M.TEMPLATES)  # no two templates with one text
    for name, template in BY_NAME.items():
        assert getattr(M, name) is template and template.name == name


def _literals(tree: ast.Module) -> list[str]:
    """The string constants of a module (f-strings' literal parts too), its docstrings aside."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_no_module_writes_a_template_s_english_again():
    """No copy of a template's words outside messages.py (an f-string that says the same): a copy would drift."""
    pieces = {
        lit.strip(" ,;:()")
        for template in BY_NAME.values()
        for lit, _, _, _ in string.Formatter().parse(template)
        if len(lit.strip(" ,;:()")) >= 20  # a phrase, not a word or two
    }
    copies = [
        f"{path.relative_to(PACKAGE.parent)}: {piece!r}"
        for path, tree in _trees().items()
        for text in _literals(tree)
        for piece in pieces
        if piece in text
    ]
    assert not copies, "\n".join(copies)


def test_results_hold_messages_not_text():
    """What a grader decision records is typed as a message (mypy holds every module to it)."""
    hints = typing.get_type_hints(results.Result)
    assert hints["note"] == M.Msg | None and hints["cell_errors"] == list[M.Msg]
    assert typing.get_type_hints(results.ItemResult)["lines"] == list[M.Msg]
    assert typing.get_type_hints(submissions.Entry)["note"] == M.Msg | None


def test_a_message_is_only_a_template_filled_in_whole():
    with pytest.raises(TypeError):
        M.CHECK(n=1, label="x")  # CHECK has no label
    with pytest.raises(TypeError):
        M.CHECK_LABELLED(n=1)  # nor a label left out
    with pytest.raises(TypeError):
        M.RAISED(error=["not a tuple"])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        M.Msg.from_json({"t": "NOT_A_TEMPLATE", "p": {}})
    with pytest.raises(ValueError):
        M.Msg.from_json(M.PASSED_ALL(checks=M.CHECKS(n=2)).to_json(), M.CHILD_SAYS)  # the child may not say it
    english = "passed all 2 checks"  # a cache of format 1 held English
    with pytest.raises(ValueError):
        results.Result.from_json({"student": "ada", "items": {"a": {"points": 1, "max": 1, "lines": [english]}}})


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_template_has_a_chinese_translation(name):
    """In the compiled catalog the package ships (``tools/i18n.py grader``), with the same placeholders."""
    template = BY_NAME[name]
    zh = M.translator("zh")
    chinese = zh._catalog.gettext(template)
    assert template in getattr(zh._catalog, "_catalog", {}), f"{name} has no Chinese translation"
    fields = {f for _, f, _, _ in string.Formatter().parse(chinese) if f is not None}
    assert fields == template.fields, name
    assert zh(template(**{f: f"<{f}>" for f in template.fields}))  # renders
