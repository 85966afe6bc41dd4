"""The grader's layers: each module imports only modules of the layers below it, no import cycle, small modules.

Imports are read with ``ast`` from the sources (those inside functions too), so a lazy import counts like any
other. The specs (``specs/<lab>.py``) count as one module, ``specs``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from qkv.grading import sandbox

PACKAGE = Path(sandbox.__file__).parent
MAX_LINES = 300

# Bottom first. A module may import only modules of earlier rows; the standard library, numpy, torch and the
# library (``qkv`` outside ``grading``) are below them all. The first seven rows are the sandbox side.
LAYERS = [
    {"events"},  # what the child tells the grader, checked as it is read back: both ends
    {"protocol", "jobs", "words"},  # the one wire framing, what crosses it, the grader's messages: both ends
    {"messages"},  # the grader's words (templates): the sandbox's exceptions carry messages too
    {"tripwires", "limits", "shell"},
    {"standins"},
    {"child"},
    {"worker"},
    {"magics"},  # a cell as IPython runs it (IPython's transformer, grader side)
    {"spec", "analysis", "atomic", "bwrap", "forked"},  # the authoring format; helpers
    {"specs", "compare", "fingerprint", "results", "sandbox"},
    {"catalog", "lab"},
    {"submissions", "scoring", "gradescope"},
    {"batch", "reports", "gradebook"},
    {"command"},
    {"arguments"},  # the command line's arguments; imports `command` when a command runs
    {"testing"},
]


def _modules() -> dict[str, list[Path]]:
    found = {p.stem: [p] for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    found["specs"] = sorted((PACKAGE / "specs").glob("*.py"))
    return found


def _imports(path: Path, names: set[str]) -> set[str]:
    """The grader's modules that ``path`` imports (``specs.<lab>`` as ``specs``)."""
    package = ["qkv", "grading", *path.relative_to(PACKAGE).parent.parts]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            parts = [*base, *(node.module.split(".") if node.module else [])]
            targets = [[*parts, a.name] for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names]
        else:
            continue
        for t in targets:
            if t[:2] == ["qkv", "grading"] and len(t) > 2 and t[2] in names:
                out.add(t[2])
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set().union(*(_imports(p, set(modules)) for p in paths)) - {name} for name, paths in modules.items()}


def test_every_module_has_a_layer():
    declared = set().union(*LAYERS)
    assert sum(len(row) for row in LAYERS) == len(declared)
    assert set(_modules()) == declared


@pytest.mark.parametrize("module", sorted(set().union(*LAYERS)))
def test_imports_go_downward_only(module):
    row = {name: n for n, names in enumerate(LAYERS) for name in names}
    upward = {other for other in _graph()[module] if row[other] >= row[module]}
    assert not upward, f"{module} (row {row[module]}) imports {sorted(upward)} of the same row or above"


def test_no_import_cycle():
    graph, state = _graph(), {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == "open":
            raise AssertionError(f"import cycle: {' -> '.join([*path, name])}")
        if state.get(name) is None:
            state[name] = "open"
            for other in sorted(graph[name]):
                visit(other, [*path, name])
            state[name] = "done"

    for name in sorted(graph):
        visit(name, [])


def test_the_sandbox_side_imports_only_itself():
    """What ``make_lib`` copies into the sandbox must run there: no other module of the grader, nothing of qkv's."""
    inside = set(sandbox.INSIDE_MODULES)
    for name in inside:
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.module in inside, f"{name} imports .{node.module}"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert not [n for n in names if n.split(".")[0] == "qkv"], f"{name} imports {names}"
                # the grader transforms IPython's syntax before a cell goes in (magics.py): no IPython inside
                assert not [n for n in names if n.split(".")[0] == "IPython"], f"{name} imports {names}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_is_short_and_says_its_layer(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES, f"{path.name}: {len(text.splitlines())} lines"
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert doc, f"{path.name} has no module docstring"
    if path.parent == PACKAGE and path.name != "__init__.py":  # the specs have their own format (specs/README.md)
        assert "\nLayer: " in doc, f"{path.name}: the docstring does not say which layer it is (Layer: ...)"
