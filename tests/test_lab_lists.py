"""Every lab (``qkv.labs.lab_ids``: a solution under solutions/) has each of the pieces kept per lab, and no piece
names a lab that does not exist. The lists of labs in the tests and benchmarks are lab_ids() itself; what must
still be written per lab (a table, a spec, a row) is checked here, so a new lab cannot silently go untested."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from qkv.labs import lab_ids

ROOT = Path(__file__).resolve().parents[1]
LABS = lab_ids(ROOT)
SPECS = ROOT / "src" / "qkv" / "grading" / "specs"

sys.path.insert(0, str(ROOT / "tests" / "grading"))
from variants.notebook import LIBRARY  # noqa: E402

# Per lab: a file that must exist (CONTRIBUTING.md, "Add a lab").
FILES = {
    "the grading spec": "src/qkv/grading/specs/{lab}.py",
    "the packaged record (qkv labs)": "src/qkv/grading/specs/{lab}.json",
    "the spec's planted-bug test": "tests/grading/test_spec_{lab}.py",
    "the corpus table": "tests/grading/corpus/{lab}.py",
    "the released lab (qkv labs)": "labs/{lab}/{lab}.ipynb",
    "the Chinese lab (qkv labs --edition zh)": "labs/zh/{lab}/{lab}.ipynb",
    "the Chinese catalog (make i18n)": "locales/zh_CN/LC_MESSAGES/labs/{lab}/{lab}.po",
}
# Per lab: a page that must name it (the book's table of contents and the two tables of every lab; the notes'
# map names only the labs that practise a section of the notes).
PAGES = {
    "_toc.yml": "labs/{lab}/{lab}",
    "README.md": "`{lab}`",
    "chapters/preface.md": "../labs/{lab}/{lab}.ipynb",
}


def test_the_course_has_labs():
    assert len(LABS) >= 8, LABS


@pytest.mark.parametrize("lab", LABS)
def test_every_lab_has_its_pieces(lab):
    missing = [
        f"{what}: {path.format(lab=lab)}" for what, path in FILES.items() if not (ROOT / path.format(lab=lab)).is_file()
    ]
    missing += [
        f"{page} does not name {text.format(lab=lab)}"
        for page, text in PAGES.items()
        if text.format(lab=lab) not in (ROOT / page).read_text(encoding="utf-8")
    ]
    if lab not in LIBRARY:
        missing.append("tests/grading/variants/notebook.py: LIBRARY has no call of the library this lab forbids")
    assert not missing, f"{lab} lacks:\n" + "\n".join(missing)


def test_no_piece_names_a_lab_that_does_not_exist():
    """A renamed or removed lab leaves nothing behind (a table nobody runs)."""
    found = {
        "specs/": {p.stem for p in SPECS.glob("*.py")} - {"__init__", "contracts"},
        "specs/*.json": {p.stem for p in SPECS.glob("*.json")},
        "tests/grading/test_spec_*.py": {
            p.stem[len("test_spec_") :] for p in (ROOT / "tests/grading").glob("test_spec_*.py")
        },
        "tests/grading/corpus/": {p.stem for p in (ROOT / "tests/grading/corpus").glob("*.py")} - {"build"},
        "labs/": {p.name for p in (ROOT / "labs").iterdir() if p.is_dir()} - {"zh"},
        "LIBRARY": set(LIBRARY),
        "_toc.yml": set(re.findall(r"file: labs/(\w+)/\1\b", (ROOT / "_toc.yml").read_text(encoding="utf-8"))),
    }
    stale = {where: sorted(names - set(LABS)) for where, names in found.items() if names - set(LABS)}
    assert not stale, f"labs that have no solutions/<lab>/<lab>.ipynb: {stale}"
