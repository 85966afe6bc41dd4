"""Rewrites of the notebook around the answers: scratch cells, magics, Chinese comments, an older release.

Each keeps what every cell of the lab computes in Jupyter (a student's scratch cell only adds); they run after
the syntax-tree rewrites of ``code.py``, since those drop comments and cannot parse magics.
"""

from __future__ import annotations

import ast

from nbformat.v4 import new_code_cell

from .cells import (
    NotApplicable,
    answer_cells,
    definitions,
    graded_cells,
    insert_after,
    nbgrader,
    rechecksum,
    setup_cell,
    source,
)

# A valid call of a function the lab forbids in its answers, as a student compares with the library (and as
# an earlier release of the lab's own self-checks did).
LIBRARY = {
    "soft_lookup": "ref = torch.softmax(torch.tensor([1.0, 2.0, 3.0]), dim=-1)\n"
    "cos = torch.cosine_similarity(torch.ones(1, 3), torch.arange(3.0)[None], dim=-1)",
    "qkv_scores": "ref = qkv.scaled_dot_product_attention(torch.randn(1, 4, 8), torch.randn(1, 5, 8), torch.randn(1, 5, 3))",
    "scaling": "ref = qkv.scaled_dot_product_attention(torch.randn(1, 4, 8), torch.randn(1, 5, 8), torch.randn(1, 5, 3))",
    "masks": "ref = qkv.causal_mask(4)\nsoft = torch.softmax(torch.randn(4, 4).masked_fill(~ref, float('-inf')), dim=-1)",
    "multihead": "mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)\n"
    "x_ref = torch.randn(1, 5, 8)\nref, _ = mha(x_ref, x_ref, x_ref)",
    "positional": "ref = qkv.sinusoidal_positional_encoding(6, 8)",
    "conv_attention": "ref = F.conv1d(torch.randn(1, 2, 5), torch.randn(3, 2, 3), padding=1)",
    "tiny_transformer": "ref_model = reference_model(make_params(), 2)\n"
    "ref = ref_model(torch.zeros(1, 4, dtype=torch.long))\nln = torch.nn.LayerNorm(8)(torch.randn(2, 8))",
}

CHINESE = (
    "# 先算分数，再做 softmax",
    "# 注意维度：最后一维是特征",
    "# 这里和讲义里的公式一一对应",
    "# 检查一下形状是否正确",
    "# 返回结果（形状见文档字符串）",
    "# 老师说要避免数值溢出",
)


def _answer(nb: dict, ctx) -> dict:
    cells = [c for c in answer_cells(nb) if not source(c).startswith("%")]
    if not cells:
        raise NotApplicable("no answer cell left without a magic")
    return ctx.rng.choice(cells)


def _magic(name: str, line: str):
    def rewrite(nb: dict, ctx) -> None:
        cell = _answer(nb, ctx)
        cell["source"] = line + "\n" + source(cell)

    rewrite.__name__ = rewrite.__qualname__ = name
    rewrite.__doc__ = f"``{line.split()[0]}`` on an answer cell, as Jupyter runs it."
    return rewrite


cell_magic_time = _magic("cell_magic_time", "%%time")
cell_magic_capture = _magic("cell_magic_capture", "%%capture captured")
line_magics = _magic("line_magics", '%matplotlib inline\n%config InlineBackend.figure_format = "retina"')


def chinese_comments(nb: dict, ctx) -> None:
    """Comments in Chinese above the statements of every answer cell."""
    for cell in answer_cells(nb):
        out = []
        for line in source(cell).splitlines():
            stripped = line.lstrip()
            if stripped.startswith(("return", "def ", "for ")) and not stripped.startswith("%"):
                out.append(line[: len(line) - len(stripped)] + ctx.rng.choice(CHINESE))
            out.append(line)
        cell["source"] = "\n".join(out) + "\n"


def _scratch(nb: dict, ctx, text: str, tag: str) -> None:
    insert_after(nb, _answer(nb, ctx), text, tag)


def stdlib_imports(nb: dict, ctx) -> None:
    """A scratch cell that imports pickle, json and gc to save a small table and clean up."""
    text = f"""
import gc
import json
import pickle

summary = {{"lab": "{ctx.lab}", "done": True, "notes": ["checked shapes", "compared with the notes"]}}
with open("my_summary.pkl", "wb") as f:
    pickle.dump(summary, f)
print(json.dumps(summary))
gc.collect()
"""
    _scratch(nb, ctx, text, "stdlib")


def sys_os_imports(nb: dict, ctx) -> None:
    """A scratch cell that prints the Python version and the folder (``import os, sys``)."""
    _scratch(nb, ctx, "import os\nimport sys\n\nprint(sys.version.split()[0], os.getcwd())", "sys")


def scratch_plot(nb: dict, ctx) -> None:
    """A scratch cell with a heat map and a line plot."""
    text = """
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7, 3))
im = ax1.imshow(torch.rand(6, 6), cmap="viridis")
fig.colorbar(im, ax=ax1)
ax2.plot(torch.linspace(0, 1, 20), torch.linspace(0, 1, 20) ** 2, marker="o")
ax2.set(xlabel="x", ylabel="x squared", title="just looking")
plt.show()
"""
    _scratch(nb, ctx, text, "plot")


def scratch_help(nb: dict, ctx) -> None:
    """A scratch cell with ``help()`` on the student's own function and a print of it."""
    cell, _, node = ctx.rng.choice(definitions(nb, (ast.FunctionDef, ast.ClassDef)))
    insert_after(nb, cell, f"help({node.name})\nprint({node.name})", "help")


def library_in_scratch(nb: dict, ctx) -> None:
    """A scratch cell that calls the library function the lab forbids in the answers, to compare."""
    _scratch(nb, ctx, LIBRARY[ctx.lab] + "\nprint(type(ref))", "library")


def reseed(nb: dict, ctx) -> None:
    """A cell after the setup that seeds the global generator again, with another seed."""
    insert_after(nb, setup_cell(nb), "torch.manual_seed(1234)\nimport random\n\nrandom.seed(1234)", "seed")


def explore_longer(nb: dict, ctx) -> None:
    """An explore cell at the end that trains for a while (some 10 s on a CPU)."""
    if ctx.lab == "tiny_transformer":
        text = "long_losses = train_reversal(make_params(seed=1), 2, 8, steps=1000)\nprint(long_losses[-1])"
    else:
        text = """
# train a little linear model for longer, to see the loss go down
torch.manual_seed(7)
X = torch.randn(4096, 128)
y = X @ torch.randn(128, 1)
w = torch.zeros(128, 1, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
for step in range(3000):
    loss = ((X @ w - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"final loss {loss.item():.3g}")
"""
    nb["cells"].append(new_code_cell(text.strip("\n") + "\n", id="variant-explore-longer"))


def old_release(nb: dict, ctx) -> None:
    """The lab's locked test cells as an earlier release wrote them (another header; the first one also
    compared with the library), each with nbgrader's checksum of that source."""
    cells = graded_cells(nb)
    for n, cell in enumerate(cells):
        extra = "\n" + LIBRARY[ctx.lab] + "\n" if n == 0 else ""
        cell["source"] = "# self-check, release 2025.1\n" + source(cell) + extra
        rechecksum(cell)
    if not cells or not all(nbgrader(c).get("checksum") for c in cells):
        raise NotApplicable("no locked test cell")
