"""Sphinx extension for the qkv book: the book reads none of what git ignores.

Tools leave folders in a checkout that hold Markdown and notebooks: virtual environments (``.venv-hub``), nbgrader's
``release/`` and ``source/`` when run from the root, builds. Sphinx would read them as pages, and ``-W`` fail on them,
depending on which Makefile targets ran before. So every pattern of the root's ``.gitignore`` joins
``exclude_patterns`` here, one list kept in one place; ``_config.yml`` names only tracked folders that are not pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config


def ignored_patterns(root: Path) -> list[str]:
    """``root/.gitignore`` as Sphinx exclude patterns, each anchored at the root, where the tools write: Sphinx
    applies ``exclude_patterns`` to the files it copies from ``html_static_path`` too, and an any-depth ``**/dist``
    would silently drop a vendored asset. A trailing slash (folders only, in git) is dropped."""
    gitignore = root / ".gitignore"
    lines = gitignore.read_text().splitlines() if gitignore.is_file() else []
    return [line.strip().strip("/") for line in lines if line.strip() and not line.startswith(("#", "!"))]


def exclude_ignored(app: Sphinx, config: Config) -> None:
    config.exclude_patterns = [*config.exclude_patterns, *ignored_patterns(Path(app.srcdir))]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", exclude_ignored)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
