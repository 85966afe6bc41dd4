"""Notebook plumbing the rewrites share: answer cells, parsed definitions, new cells, nbgrader checksums."""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass

import nbformat
from nbformat.v4 import new_code_cell
from nbgrader.utils import compute_checksum


class NotApplicable(Exception):
    """The rewrite has nothing to act on in this lab (e.g. no answer class to give methods)."""


@dataclass
class Context:
    """What a rewrite may use: the lab, its own random stream, the lab's library calls for scratch cells."""

    lab: str
    rng: random.Random
    forbidden: tuple[str, ...]  # the spec's forbidden names, e.g. "torch.softmax"


def source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def answer_cells(nb: dict) -> list[dict]:
    """The code cells a student writes in (nbgrader ``solution``), in notebook order."""
    return [c for c in nb["cells"] if c["cell_type"] == "code" and nbgrader(c).get("solution")]


def parsed(cell: dict) -> ast.Module | None:
    """The cell's syntax tree, or None where it is not plain Python (a magic, a syntax error)."""
    try:
        return ast.parse(source(cell))
    except SyntaxError:
        return None


def definitions(nb: dict, kinds=(ast.FunctionDef,)) -> list[tuple[dict, ast.Module, ast.AST]]:
    """(cell, tree, node) for each answer of the given kinds: the definition an answer cell is named after (its
    grade_id), never a helper that a rewrite or a student added."""
    out = []
    for cell in answer_cells(nb):
        tree = parsed(cell)
        if tree is not None:
            gid = nbgrader(cell).get("grade_id")
            out += [(cell, tree, node) for node in tree.body if isinstance(node, kinds) and node.name == gid]
    return out


def answer_names(nb: dict) -> set[str]:
    return {node.name for _, _, node in definitions(nb, (ast.FunctionDef, ast.ClassDef))}


def write(cell: dict, tree: ast.Module) -> None:
    cell["source"] = ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def code(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def index_of(nb: dict, cell: dict) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c is cell)


def insert_after(nb: dict, cell: dict, text: str, tag: str) -> dict:
    """A new student code cell right after ``cell``; returns it."""
    new = new_code_cell(text.strip("\n") + "\n", id=f"variant-{tag}-{len(nb['cells'])}")
    nb["cells"].insert(index_of(nb, cell) + 1, new)
    return new


def setup_cell(nb: dict) -> dict:
    return next(c for c in nb["cells"] if nbgrader(c).get("grade_id") == "setup")


def graded_cells(nb: dict) -> list[dict]:
    return [
        c for c in nb["cells"] if c["cell_type"] == "code" and nbgrader(c).get("grade") and nbgrader(c).get("locked")
    ]


def rechecksum(cell: dict) -> None:
    """Store nbgrader's own checksum of the cell's (changed) source, as an older release of the lab carries."""
    cell["metadata"]["nbgrader"]["checksum"] = compute_checksum(nbformat.from_dict(cell))


def params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def call_with_params(fn: ast.FunctionDef, target: str) -> str:
    """Source of a call of ``target`` passing ``fn``'s parameters on as they came in."""
    a = fn.args
    parts = [p.arg for p in a.posonlyargs + a.args]
    if a.vararg:
        parts.append(f"*{a.vararg.arg}")
    parts += [f"{p.arg}={p.arg}" for p in a.kwonlyargs]
    if a.kwarg:
        parts.append(f"**{a.kwarg.arg}")
    return f"{target}({', '.join(parts)})"


def docstring_and_body(fn: ast.FunctionDef) -> tuple[list[ast.stmt], list[ast.stmt]]:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        if isinstance(body[0].value.value, str):
            return body[:1], body[1:]
    return [], body


def local_names(fn: ast.FunctionDef) -> list[str]:
    """Names the function assigns (not its parameters), in order of first assignment."""
    seen: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in seen:
            seen.append(node.id)
    return [n for n in seen if n not in params(fn)]


def loaded_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(node) if isinstance(a, ast.arg)
    }


def rename(node: ast.AST, mapping: dict[str, str]) -> None:
    """Rename variables (and parameters of nested functions) throughout ``node``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in mapping:
            n.id = mapping[n.id]
        elif isinstance(n, ast.arg) and n.arg in mapping:
            n.arg = mapping[n.arg]
