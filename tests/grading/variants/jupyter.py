"""Run a variant as Jupyter runs it (nbclient, a real IPython kernel) and list the errors its cells raise."""

from __future__ import annotations

import json
import tempfile

import nbformat
from nbclient import NotebookClient


def errors_in_jupyter(nb: dict, timeout: int = 300) -> list[str]:
    """``"cell N: Ename: value"`` for every cell that raised, the notebook run top to bottom in a fresh kernel
    in an empty folder (errors in cells tagged ``raises-exception`` count too: a variant must raise none)."""
    node = nbformat.reads(json.dumps(nb), as_version=4)
    with tempfile.TemporaryDirectory(prefix="variant-") as tmp:
        NotebookClient(node, timeout=timeout, allow_errors=True, resources={"metadata": {"path": tmp}}).execute()
    return [
        f"cell {n}: {out['ename']}: {out['evalue']}"
        for n, cell in enumerate(node.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
