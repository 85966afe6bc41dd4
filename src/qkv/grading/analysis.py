"""A fast first pass on the submission's source: its definitions, and the names of forbidden callables and hatches.

Only what runs costs a point: the sandbox's watchers (``tripwires.py``) see a forbidden call that a graded call
executes. This pass never takes a point by itself; it finds a missing definition, and, once the run has shown a
forbidden call, names how the source reached it. For each graded name it follows the top-level
definitions that name uses (functions, classes, assignments, imports), and finds

* a forbidden callable referred to by attribute (``torch.softmax``, ``x.softmax(...)``, ``F.softmax``) or
  imported under any name (``from torch import softmax as s``);
* an escape hatch inside that code (``__closure__``, ``_C``, ``getattr`` of a module by a computed name ...),
  which could reach a forbidden callable by a route the tripwires do not cover;

and, anywhere in the notebook, code that rewrites names or the runtime behind the grader's back (``exec``,
``eval``, ``globals()``, ``gc``, ``ctypes``, ``sys.modules``, frames). None of it costs or adds a point.

Only the student's own code is judged: cells whose source is one of the released lab's (``trusted``) are the
lab's, and ordinary Python in the student's code (``getattr``/``setattr`` on their own objects, loops,
helpers, classes) is not a hatch: ``getattr`` or ``setattr`` is flagged only on an imported module with a
computed name, or with a constant name that is forbidden or a hatch.

Layer: grader side, above ``magics``; imports the standard library and ``magics`` (a cell as IPython runs it).
"""

from __future__ import annotations

import ast
import functools
import threading
from collections.abc import Set
from dataclasses import dataclass, field

from .magics import python_source

# Anywhere in a submission: ways to define or rebind code the grader cannot read, or to reach into the runtime.
GLOBAL_HATCH_NAMES = {"exec", "eval", "compile", "globals", "__import__", "breakpoint", "vars", "locals"}
GLOBAL_HATCH_MODULES = {
    "gc",
    "ctypes",
    "importlib",
    "builtins",
    "inspect",
    "marshal",
    "cffi",
    "pickle",
    "dill",
    "__main__",
    "runpy",
    "subprocess",
    "multiprocessing",
}
GLOBAL_HATCH_ATTRS = {
    "__closure__",
    "__code__",
    "__globals__",
    "__wrapped__",
    "__builtins__",
    "__dict__",
    "__subclasses__",
    "__bases__",
    "__base__",
    "__mro__",
    "__getattribute__",
    "__reduce__",
    "__reduce_ex__",
    "_getframe",
    "settrace",
    "setprofile",
    "f_globals",
    "f_locals",
    "f_back",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "co_consts",
    "cell_contents",
    "_C",
    "_VariableFunctions",
    "aten",
    "_ops",
    "__self__",
    "__func__",
}
# Inside the code of a graded name: also dynamic attribute access to a module (see ``_dynamic_attrs``).
DYNAMIC_ATTR = {"getattr", "setattr", "delattr", "hasattr"}


@dataclass
class Finding:
    forbidden: list[str] = field(default_factory=list)  # forbidden callables used
    hatches: list[str] = field(default_factory=list)  # escape hatches in the graded code or anywhere
    missing: bool = False  # no top-level definition found


@functools.lru_cache(maxsize=16)
def _parse_cached(cells: tuple[str, ...]) -> tuple[ast.Module | None, ...]:
    """One parse per submission, however many items ask (trees are only read, never changed)."""
    return tuple(_parse_cells(list(cells)))


# CPython 3.11's ast.parse keeps its depth counter interpreter-wide: two grading threads parsing at once fail with
# "SystemError: AST constructor recursion depth mismatch" (gh-106905), a grader error under load. One at a time.
_PARSE_LOCK = threading.Lock()


def _parse_cells(cells: list[str]) -> list[ast.Module | None]:
    """One tree per cell, None where a cell does not parse (it will not run either)."""
    trees: list[ast.Module | None] = []
    for src in cells:
        try:
            with _PARSE_LOCK:
                trees.append(ast.parse(python_source(src)))  # what the child runs
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            trees.append(None)
    return trees


def _bound_names(node: ast.stmt) -> list[str]:
    """Names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.append(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            names.append(sub.name)
    return names


def _import_paths(node: ast.AST) -> dict[str, str]:
    """Local name -> dotted path, for the imports in ``node``."""
    out = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Import):
            for a in sub.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(sub, ast.ImportFrom) and sub.module and not sub.level:
            for a in sub.names:
                out[a.asname or a.name] = f"{sub.module}.{a.name}"
    return out


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else "..." + text[-57:]


def _free_names(stmt: ast.stmt) -> set[str]:
    """Names a statement reads that are not its functions' own parameters or locals (an approximation)."""
    local: set[str] = set()
    for sub in ast.walk(stmt):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = sub.args
            local |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
            local |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
            for inner in ast.walk(sub):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local.add(inner.id)
                elif inner is not sub and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    local.add(inner.name)  # a nested def is local; its body is scanned as part of this statement
        elif isinstance(sub, ast.comprehension):
            local |= {n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name)}
    loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads - local


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _folded(node: ast.AST) -> str | None:
    """The string a constant expression spells (``"soft" + "max"``), or None when it depends on run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(v) for v in node.values]
        return None if any(p is None for p in parts) else "".join(parts)  # type: ignore[arg-type]
    return None


def _dynamic_attrs(node: ast.AST, modules: set[str], last: dict[str, str]) -> tuple[set[str], set[str]]:
    """(forbidden, hatches) among ``getattr``-like calls in ``node``: a constant name (constants joined
    included) is read like ``obj.name``;
    a computed one is a hatch only on an imported module (``getattr(self, f"w_{i}")`` is ordinary Python)."""
    forbidden, hatches = set(), set()
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in DYNAMIC_ATTR):
            continue
        if len(sub.args) < 2:
            hatches.add(f"{sub.func.id}()")
            continue
        obj, name = sub.args[0], _folded(sub.args[1])
        if name in last:
            forbidden.add(_text(sub))  # as written: getattr(scores, "soft" + "max")
        elif name in GLOBAL_HATCH_ATTRS:
            hatches.add(f".{name}")
        if not isinstance(sub.args[1], ast.Constant) and (_root(obj) in modules or _root(obj) is None):
            hatches.add(f"{sub.func.id}()")
    return forbidden, hatches


def _hatches(node: ast.AST, names: set[str]) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in names:
            found.add(f"{sub.id}()")
        elif isinstance(sub, ast.Attribute) and sub.attr in GLOBAL_HATCH_ATTRS:
            found.add(f".{sub.attr}")
        elif (
            isinstance(sub, ast.Attribute)
            and sub.attr == "modules"
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "sys"
        ):
            found.add("sys.modules")
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in sub.names] if isinstance(sub, ast.Import) else [sub.module or ""]
            for m in mods:
                if m.split(".")[0] in GLOBAL_HATCH_MODULES or (m == "sys" and isinstance(sub, ast.ImportFrom)):
                    found.add(f"import {m}")
    return found


def analyse(
    cells: list[str], function: str, forbid: tuple[str, ...] | list[str], trusted: Set[str] = frozenset()
) -> Finding:
    """What the grader can see, statically, of how the submission defines ``function``.

    ``trusted``: sources (stripped) of the released lab's cells; a cell equal to one of them is the lab's, not
    the student's, and is followed (for the names it defines) but never judged.
    """
    trees = _parse_cached(tuple(cells))
    untrusted = [t for t, c in zip(trees, cells) if t is not None and c.strip() not in trusted]
    top: dict[str, list[ast.stmt]] = {}
    own: set[int] = set()  # ids of the student's own top-level statements
    modules: set[str] = set()  # names bound by imports anywhere (``torch``, ``F``, ``nn``)
    for tree in trees:
        if tree is None:
            continue
        mine = any(tree is t for t in untrusted)
        for stmt in tree.body:
            if mine:
                own.add(id(stmt))
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                modules |= set(_import_paths(stmt))
            for name in _bound_names(stmt):
                top.setdefault(name, []).append(stmt)
    finding = Finding()
    if function not in top:
        finding.missing = True
        return finding
    if not forbid:
        return finding
    last = {d.rsplit(".", 1)[-1]: d for d in forbid}
    paths = {d for d in forbid}
    seen: set[str] = set()
    todo = [function]
    stmts: list[ast.stmt] = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in top.get(name, []):
            if stmt in stmts:
                continue
            stmts.append(stmt)
            todo.extend(n for n in _free_names(stmt) if n in top)
    forbidden, hatches = set(), set()
    for stmt in stmts:
        if id(stmt) not in own:
            continue
        imports = _import_paths(stmt)
        for path in imports.values():
            if path in paths or any(path.endswith("." + k) or path == k for k in last):
                forbidden.add(path)
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Attribute) and sub.attr in last:
                forbidden.add(_text(sub))
            elif isinstance(sub, ast.Name) and sub.id in last and sub.id not in top:
                forbidden.add(last[sub.id])  # e.g. a star import
        hatches |= _hatches(stmt, GLOBAL_HATCH_NAMES)
        dyn_forbidden, dyn_hatches = _dynamic_attrs(stmt, modules, last)
        forbidden |= dyn_forbidden
        hatches |= dyn_hatches
    for tree in untrusted:
        hatches |= _hatches(tree, GLOBAL_HATCH_NAMES)
    finding.forbidden = sorted(forbidden)
    finding.hatches = sorted(hatches)
    return finding
