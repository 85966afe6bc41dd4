"""Write the same install cell at the top of every chapter and lab solution, from the book's ``_config.yml``.

On Colab (or anywhere ``qkv`` is missing) the cell installs ``qkv[lab]`` from ``repository.url`` at
``repository.branch``: a fork changes that one place and runs this tool. The environment variable
``QKV_INSTALL_FROM`` (any URL pip takes, e.g. ``file:///tmp/qkv-0.1.0-py3-none-any.whl``) overrides the source.
The cell is removed from the HTML (tag ``remove-cell``) and locked for nbgrader (the grader trusts it as the
lab's own cell). Idempotent: run it after every merge; ``--check`` only reports notebooks that differ.
``qkv labs`` copies the cell from the solutions into ``labs/``.

    python tools/install_cell.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "install-qkv"
TEMPLATE = """\
# Installs qkv where it is missing (e.g. on Colab); set QKV_INSTALL_FROM to install another build.
try:
    import qkv  # noqa: F401
except ImportError:
    import os
    import subprocess
    import sys

    source = os.environ.get("QKV_INSTALL_FROM", "{source}")
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"qkv[lab] @ {{source}}"], check=True)"""
METADATA = {
    "nbgrader": {
        "grade": False,
        "grade_id": "install_qkv",
        "locked": True,
        "schema_version": 3,
        "solution": False,
        "task": False,
    },
    "tags": ["remove-cell"],
}
# The block every chapter's setup cell began with before this tool wrote its own cell (removed once, on sight).
LEGACY_START = 'import importlib.util\nimport subprocess\nimport sys\n\nif importlib.util.find_spec("qkv") is None:'


def notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks that carry the cell: every chapter and every lab's solution (``qkv labs`` makes the labs)."""
    return sorted(root.glob("chapters/*.ipynb")) + sorted(root.glob("solutions/*/*.ipynb"))


def source(config: Path = ROOT / "_config.yml") -> str:
    """The cell's code, installing from ``repository.url`` at ``repository.branch`` of the book's config."""
    repo = yaml.safe_load(config.read_text(encoding="utf-8"))["repository"]
    url, branch = repo["url"].rstrip("/"), repo.get("branch") or "main"
    return TEMPLATE.format(source=f"git+{url}@{branch}")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _drop_legacy(cell: dict) -> None:
    text = "".join(cell["source"])
    if text.startswith(LEGACY_START):
        rest = text.split("\n\n", 2)[2]  # the imports, the `if` block, then the cell's own code
        cell["source"] = _lines(rest.lstrip("\n"))


def apply(nb: dict, code: str) -> bool:
    """Put the install cell first among the code cells of ``nb``; True when ``nb`` changed."""
    before = json.dumps(nb, sort_keys=True)
    cells = nb["cells"]
    mine = [c for c in cells if c.get("id") == CELL_ID]
    for extra in mine[1:]:
        cells.remove(extra)
    cell = mine[0] if mine else {"cell_type": "code", "execution_count": None, "id": CELL_ID, "outputs": []}
    cell.update(source=_lines(code), metadata=json.loads(json.dumps(METADATA)))
    if mine:
        cells.remove(cell)
    first = next((i for i, c in enumerate(cells) if c["cell_type"] == "code"), len(cells))
    cells.insert(first, cell)
    if first + 1 < len(cells) and cells[first + 1]["cell_type"] == "code":
        _drop_legacy(cells[first + 1])
    return json.dumps(nb, sort_keys=True) != before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook differs")
    args = parser.parse_args(argv)
    code, stale = source(), []
    for path in notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        if apply(nb, code):
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    verb = "differ from _config.yml (run tools/install_cell.py)" if args.check else "updated"
    for path in stale:
        print(f"{path}: install cell {verb}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
