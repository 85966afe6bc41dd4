"""A lab's "Read first" link opens its chapter where students really open the lab: the repository (Binder), the
student distribution, and `qkv workspace` (what `make lab` serves), in both editions; the Chinese labs open the
Chinese chapters. (The hub's students, whose labs nbgrader fetches, are walked in tests/browser/test_hub_course.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qkv import labs
from qkv.course import student_dist

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#:\s]+\.ipynb)\)")  # relative links to notebooks in Markdown


def _links(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [link for c in cells if c["cell_type"] == "markdown" for link in LINK.findall("".join(c["source"]))]


def _check_layout(root: Path, edition: str) -> list[str]:
    """Every notebook link of every lab of `edition` under `root` (the course's shape) and of the chapters they
    link: the target's path, if it is missing or not in the edition's language."""
    problems, language = [], (labs.EDITIONS[edition][1] or "en").replace("_", "-")
    folder = root / labs.EDITIONS[edition][0]
    notebooks = [folder / lab / f"{lab}.ipynb" for lab in labs.lab_ids(ROOT)]
    assert all(nb.is_file() for nb in notebooks), [nb for nb in notebooks if not nb.is_file()]
    chapters = []
    for lab in notebooks:
        targets = [(lab.parent / link).resolve() for link in _links(lab)]
        assert targets, f"{lab}: no link to a chapter"
        chapters += [t for t in targets if t.parent.name == labs.CHAPTERS]
        problems += [f"{lab.relative_to(root)} -> {t}: missing" for t in targets if not t.is_file()]
    for chapter in {c for c in chapters if c.is_file()}:
        meta = json.loads(chapter.read_text(encoding="utf-8")).get("metadata", {})
        if meta.get("language", "en") != language:
            problems.append(f"{chapter.relative_to(root)}: language {meta.get('language', 'en')}, not {language}")
        targets = [(chapter.parent / link).resolve() for link in _links(chapter)]
        problems += [f"{chapter.relative_to(root)} -> {t}: missing" for t in targets if not t.is_file()]
    return problems


@pytest.mark.parametrize("edition", list(labs.EDITIONS))
def test_read_first_links_resolve_in_the_repository(edition):
    assert _check_layout(ROOT, edition) == []


@pytest.mark.parametrize("edition", list(labs.EDITIONS))
def test_read_first_links_resolve_in_a_workspace(tmp_path, edition):
    labs.copy_workspace(ROOT, tmp_path / "work", edition=edition)
    assert _check_layout(tmp_path / "work", edition) == []
    assert labs.linked_chapters(ROOT), "the labs link no chapter"


def test_read_first_links_resolve_in_the_student_distribution(tmp_path):
    student_dist(ROOT, tmp_path / "dist")
    assert [p for e in labs.EDITIONS for p in _check_layout(tmp_path / "dist", e)] == []
    assert not (tmp_path / "dist" / "chapters" / "teaching.md").exists()
