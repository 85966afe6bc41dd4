"""The book reads only the course's own pages: the folders that tools leave in a checkout (virtual environments,
nbgrader's release/ and source/, the hub's state, builds) hold Markdown and notebooks, and `jupyter-book build -W`
would read them (and fail) whatever order a contributor ran the Makefile's targets in."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from sphinx.util.matching import get_matching_files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from qkv_sources import ignored_patterns  # noqa: E402  (the book's own extension, as _config.yml loads it)


def test_the_book_reads_no_folder_that_git_ignores(tmp_path):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"]["qkv_sources"] == "_ext"
    exclude = [*config["config"]["exclude_patterns"], *ignored_patterns(ROOT)]
    ignored = [
        line.strip("/").replace("*", "x")
        for line in (ROOT / ".gitignore").read_text().splitlines()
        if line.endswith("/") and not line.startswith("#")
    ]
    assert ".venv-hub" in ignored and "release" in ignored  # the folders that exposed this
    for folder in ignored:
        (tmp_path / folder / "sub").mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "page.md").write_text("# a page\n")
        (tmp_path / folder / "sub" / "page.ipynb").write_text("{}")
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "page.md").write_text("# a chapter\n")

    assert sorted(get_matching_files(tmp_path, exclude_patterns=exclude)) == ["chapters/page.md"]
