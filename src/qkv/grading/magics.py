"""A code cell as the Python that IPython runs for it: magics, shell escapes and help requests included.

Layer: grader side, below ``analysis`` and ``batch``; imports the standard library and IPython's input transformer.
The grader turns every cell into Python here, before it goes into the sandbox, so the child runs (and
``analysis`` reads) exactly the same source, and the sandbox side stays free of third-party code: it only provides
the ``get_ipython()`` object that the transformed source calls (``shell.py``).

IPython's own transformer (``TransformerManager``, the one Jupyter's kernel uses) does the work: ``%time x = f()``
becomes ``get_ipython().run_line_magic('time', 'x = f()')``, ``!pip ...`` ``get_ipython().system('pip ...')``.
One change: a cell magic that runs its body in the notebook's namespace (``%%time``, ``%%capture``, ``%%prun``)
keeps its body as code, after a one-line ``begin_cell_magic`` call, instead of as a string argument: the definitions
in it are the notebook's (as in IPython) and the grader's analysis sees them.
"""

from __future__ import annotations

import ast
from functools import lru_cache

INLINE = frozenset({"time", "capture", "prun"})  # cell magics whose body runs in the notebook's namespace


def _transform(cell: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell)  # one each time: grading threads share nothing


def _cell_magic(python: str) -> tuple[str, str, str] | None:
    """(name, line, body) when ``python`` is IPython's form of a cell magic, else None."""
    if not python.lstrip().startswith("get_ipython().run_cell_magic("):
        return None
    try:
        call = ast.parse(python).body[0].value  # type: ignore[attr-defined]
        name, line, body = (a.value for a in call.args)
    except (SyntaxError, IndexError, AttributeError, ValueError):
        return None
    return (name, line, body) if all(isinstance(x, str) for x in (name, line, body)) else None


@lru_cache(maxsize=4096)  # a batch asks for each cell twice (the child's job, the analysis)
def python_source(cell: str) -> str:
    """The Python IPython runs for ``cell``; a cell it cannot transform is returned unchanged (it fails to
    compile later, as it does in Jupyter)."""
    try:
        python = _transform(cell)
    except Exception:  # IPython's transformer raises on some malformed input (an unclosed string)
        return cell
    magic = _cell_magic(python)
    if magic is None:
        return python
    name, line, body = magic
    if name in INLINE:
        return f"get_ipython().begin_cell_magic({name!r}, {line!r})\n" + python_source(body)
    if name == "timeit":  # its body runs in a scope of its own: transformed here, run by the shell
        return f"get_ipython().run_cell_magic({name!r}, {line!r}, {python_source(body)!r})\n"
    return python
