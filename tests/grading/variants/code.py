"""Rewrites of the student's own code (answer cells), on the syntax tree; each keeps what the code computes.

Each takes the notebook and a :class:`~cells.Context` and changes the notebook in place; ``ast.unparse`` writes
the cell back (comments go; the text rewrites in ``text.py`` run after these).
"""

from __future__ import annotations

import ast

from .cells import (
    NotApplicable,
    call_with_params,
    code,
    definitions,
    docstring_and_body,
    insert_after,
    loaded_names,
    local_names,
    params,
    rename,
    write,
)
from .snippets import SNIPPETS

# never a name that a later rewrite's code calls (print_inside calls type and tuple)
BUILTIN_NAMES = ("vars", "list", "input", "dir", "id", "format", "filter", "sum", "max", "min")
LONG_NAMES = ("tensor_", "my_", "tmp_", "the_")


def _pick(nb: dict, ctx, kinds=(ast.FunctionDef,)):
    defs = definitions(nb, kinds)
    if not defs:
        raise NotApplicable("no answer definition of that kind")
    return ctx.rng.choice(defs)


def _wrap_body(fn: ast.FunctionDef, call: str) -> None:
    doc, _ = docstring_and_body(fn)
    fn.body = doc + code(f"return {call}")


def extra_optional_arg(nb: dict, ctx) -> None:
    """Every answer function takes one more optional argument (``verbose=False``), and the student's own
    calls of their other answers pass it (as ``scaled_scores(q, k, scale=True)`` did)."""
    names = {fn.name for _, _, fn in definitions(nb)}
    for cell, tree, fn in definitions(nb):
        if fn.args.vararg or fn.args.kwarg:
            continue
        (fn.args.kwonlyargs if fn.args.kwonlyargs else fn.args.args).append(ast.arg("verbose"))
        (fn.args.kw_defaults if fn.args.kwonlyargs else fn.args.defaults).append(ast.Constant(False))
        doc, body = docstring_and_body(fn)
        fn.body = doc + code(f"if verbose:\n    print('{fn.name}: running')") + body
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                node.keywords.append(ast.keyword("verbose", ast.Constant(False)))
        write(cell, tree)


HELPER_NAMES = {  # distinct per rewrite, so that two of them on one answer never shadow each other
    "before": ("_{}_impl", "_compute_{}"),
    "after": ("_{}_core", "{}_helper"),
    "next_cell": ("_{}_part", "{}_step"),
}


def _extract(nb: dict, ctx, where: str) -> None:
    cell, tree, fn = _pick(nb, ctx)
    helper_name = ctx.rng.choice(HELPER_NAMES[where]).format(fn.name)
    doc, body = docstring_and_body(fn)
    helper = ast.FunctionDef(helper_name, fn.args, body, [], None, type_params=[])
    _wrap_body(fn, call_with_params(fn, helper_name))
    if where == "next_cell":
        insert_after(nb, cell, ast.unparse(ast.fix_missing_locations(helper)), "helper")
    else:
        at = tree.body.index(fn) + (1 if where == "after" else 0)
        tree.body.insert(at, helper)
    write(cell, tree)


def helper_before(nb: dict, ctx) -> None:
    """The body of an answer moves to a helper of another name, defined first in the cell."""
    _extract(nb, ctx, "before")


def helper_after(nb: dict, ctx) -> None:
    """The same helper, defined after the function that calls it (same cell)."""
    _extract(nb, ctx, "after")


def helper_next_cell(nb: dict, ctx) -> None:
    """Cells out of order: the helper lives in a new cell after the answer cell that uses it, before the
    graded test."""
    _extract(nb, ctx, "next_cell")


def _stateful(nb: dict, ctx, method: str) -> None:
    cell, tree, fn = _pick(nb, ctx)
    cls = "".join(p.title() for p in fn.name.split("_")) + ("Solver" if method == "__call__" else "Helper")
    instance = f"_{fn.name}_{cls.lower()}"
    doc, body = docstring_and_body(fn)
    meth = ast.FunctionDef(method, fn.args, code("self.calls += 1") + body, [], None, type_params=[])
    meth.args = ast.arguments(
        posonlyargs=[], args=[ast.arg("self"), *fn.args.args], vararg=fn.args.vararg,
        kwonlyargs=fn.args.kwonlyargs, kw_defaults=fn.args.kw_defaults, kwarg=fn.args.kwarg,
        defaults=fn.args.defaults,
    )  # fmt: skip
    klass = code(f"class {cls}:\n    def __init__(self):\n        self.calls = 0")[0]
    klass.body.append(meth)
    _wrap_body(fn, call_with_params(fn, f"{instance}.{method}"))
    at = tree.body.index(fn)
    tree.body[at:at] = [klass, *code(f"{instance} = {cls}()")]
    write(cell, tree)


def class_state(nb: dict, ctx) -> None:
    """An answer's work is done by a class that holds state (a call counter); the function calls it."""
    _stateful(nb, ctx, "__call__")


def forbidden_method(nb: dict, ctx) -> None:
    """The same class, its method named like a function the lab forbids (``softmax``, ``conv1d``, ...)."""
    _stateful(nb, ctx, ctx.rng.choice(ctx.forbidden).rsplit(".", 1)[-1])


def methods_named_like_helpers(nb: dict, ctx) -> None:
    """An answer class gets its own methods named like the helpers it calls (``self.split_heads``)."""
    names = {fn.name for _, _, fn in definitions(nb)}
    for cell, tree, cls in definitions(nb, (ast.ClassDef,)):
        called = sorted(
            {n.func.id for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} & names
        )
        if not called:
            continue
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in called:
                node.func = ast.Attribute(ast.Name("self", ast.Load()), node.func.id, ast.Load())
        for name in called:
            cls.body += code(f"def {name}(self, *args, **kwargs):\n    return {name}(*args, **kwargs)")
        write(cell, tree)
        return
    raise NotApplicable("no answer class calls another answer")


def builtin_names(nb: dict, ctx) -> None:
    """Locals named like builtins (``vars``, ``list``, ...) in every answer, and ``vars = [...]`` at the top
    level of a scratch cell."""
    for cell, tree, fn in definitions(nb):
        free = [b for b in BUILTIN_NAMES if b not in loaded_names(fn)]
        rename(fn, dict(zip(local_names(fn), free)))
        write(cell, tree)
    cell = definitions(nb)[0][0]
    insert_after(nb, cell, 'vars = ["q", "k", "v"]  # the names I keep mixing up\nprint(vars)', "vars")


def rename_locals(nb: dict, ctx) -> None:
    """Longer local names everywhere (``q`` -> ``my_q``)."""
    prefix = ctx.rng.choice(LONG_NAMES)
    for cell, tree, fn in definitions(nb):
        used = loaded_names(fn)
        rename(fn, {n: prefix + n for n in local_names(fn) if prefix + n not in used})
        write(cell, tree)


def strip_annotations(nb: dict, ctx) -> None:
    """No type hints and no docstrings, as many students write."""
    for cell, tree, fn in definitions(nb):
        for a in ast.walk(fn.args):
            if isinstance(a, ast.arg):
                a.annotation = None
        fn.returns = None
        doc, body = docstring_and_body(fn)
        fn.body = body or [ast.Pass()]
        write(cell, tree)


def print_inside(nb: dict, ctx) -> None:
    """A debugging print of the arguments' shapes at the start of one answer."""
    cell, tree, fn = _pick(nb, ctx)
    shown = ", ".join(params(fn)) + ("," if len(params(fn)) == 1 else "")
    doc, body = docstring_and_body(fn)
    line = f"print('{fn.name}', [tuple(a.shape) if torch.is_tensor(a) else type(a).__name__ for a in ({shown})])"
    fn.body = doc + code(line) + body
    write(cell, tree)


def _returns(fn: ast.FunctionDef) -> list[ast.Return]:
    inner = {
        id(r) for f in ast.walk(fn) if f is not fn and isinstance(f, (ast.FunctionDef, ast.Lambda)) for r in ast.walk(f)
    }
    return [r for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None and id(r) not in inner]


def numpy_roundtrip(nb: dict, ctx) -> None:
    """Every answer's result goes through NumPy and back (where it carries no gradient)."""
    for cell, tree, fn in definitions(nb):
        for r in _returns(fn):
            r.value = ast.Call(ast.Name("_via_numpy", ast.Load()), [r.value], [])
        tree.body[:0] = code(SNIPPETS["numpy"])
        write(cell, tree)


def float64_inside(nb: dict, ctx) -> None:
    """Every answer computes in float64 inside and returns its inputs' dtype."""
    for cell, tree, fn in definitions(nb):
        names = [p for p in params(fn)]
        if not names:
            continue
        tup = ", ".join(names) + ("," if len(names) == 1 else "")
        doc, body = docstring_and_body(fn)
        head = code(
            f"_dtype = _float_dtype({tup})\n"
            f"if _dtype is not None:\n"
            f"    {tup} = (a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in ({tup}))"
        )
        fn.body = doc + head + body
        for r in _returns(fn):
            r.value = ast.Call(ast.Name("_back", ast.Load()), [r.value, ast.Name("_dtype", ast.Load())], [])
        tree.body[:0] = code(SNIPPETS["float64"])
        write(cell, tree)


class _MatMul(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            return ast.Call(ast.Name("_mm", ast.Load()), [node.left, node.right], [])
        return node


def einsum_matmul(nb: dict, ctx) -> None:
    """Every ``a @ b`` in the answers becomes einsum."""
    done = False
    for cell, tree, fn in definitions(nb, (ast.FunctionDef, ast.ClassDef)):
        before = ast.dump(fn)
        _MatMul().visit(fn)
        if ast.dump(fn) != before:
            tree.body[:0] = code(SNIPPETS["einsum"])
            write(cell, tree)
            done = True
    if not done:
        raise NotApplicable("no matrix product in the answers")


def decorator_timed(nb: dict, ctx) -> None:
    """Every answer wrapped by the student's own timing decorator (functools.wraps)."""
    for cell, tree, fn in definitions(nb):
        fn.decorator_list.append(ast.Name("timed", ast.Load()))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "timed" for n in tree.body):
            tree.body[:0] = code(SNIPPETS["timed"])
        write(cell, tree)
