"""The labs' visible self-checks tried against each lab's classic mistakes.

Every planted bug of the grader's tables (``tests/grading/test_spec_<lab>.py``, imported, not copied), plus
the mistakes found by students working the blank labs (EXTRA), is planted into the solution; the self-check
cells run in-process (see ``selfcheck_harness``). Each must fail in the cell of the exercise it breaks, with a
message naming the step (the phrase listed here). Calls the grader forbids (the library, PyTorch's fused
kernels) give correct numbers, so no self-check can see them: they are listed in GRADER_ONLY, and
``qkv check`` reports them (tests/labs/test_check_command.py).
"""

from __future__ import annotations

import re

import pytest
from english_left import SENTENCE
from selfcheck_harness import LabRun, bug_table

from qkv import i18n, selfcheck
from qkv.grading.testing import COURSE, solution_notebook
from qkv.labs import lab_ids

LABS = lab_ids(COURSE)  # every lab: a new lab's planted bugs need a MESSAGE or GRADER_ONLY entry, or the test fails

# Mistakes the blank labs let through before (issue 12), in the grader tables' format.
EXTRA = {
    "masks": {
        "attention with q @ k.T (2-D only)": (
            "masked_attention",
            """
            def masked_attention(q, k, v, mask=None):
                s = q @ k.T / math.sqrt(q.shape[-1])
                if mask is not None:
                    s = s.masked_fill(~mask, float("-inf"))
                m = s.amax(-1, keepdim=True)
                e = torch.exp(s - torch.where(torch.isinf(m), torch.zeros_like(m), m))
                t = e.sum(-1, keepdim=True)
                w = torch.where(t > 0, e / torch.where(t > 0, t, torch.ones_like(t)), torch.zeros_like(e))
                return w @ v, w
            """,
            {"test_masked_attention"},
        ),
        "attention softmax over the queries": (
            "masked_attention",
            """
            def masked_attention(q, k, v, mask=None):
                s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
                e = torch.exp(s - s.amax(-2, keepdim=True))
                w = e / e.sum(-2, keepdim=True)
                return w @ v, w
            """,
            {"test_masked_attention"},
        ),
        "attention with an all-False default mask": (
            "masked_attention",
            """
            def masked_attention(q, k, v, mask=None):
                s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
                if mask is None:
                    mask = torch.zeros_like(s, dtype=torch.bool)
                s = s.masked_fill(~mask, float("-inf"))
                has = mask.any(-1, keepdim=True)
                m = s.amax(-1, keepdim=True)
                e = torch.exp(s - torch.where(has, m, torch.zeros_like(m)))
                t = e.sum(-1, keepdim=True)
                w = torch.where(has, e / torch.where(has, t, torch.ones_like(t)), torch.zeros_like(e))
                return w @ v, w
            """,
            {"test_masked_attention"},
        ),
    },
    "positional": {
        "angles in float32": (
            "sinusoidal_encoding",
            """
            def sinusoidal_encoding(num_positions, d_model):
                omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
                angles = torch.arange(num_positions, dtype=torch.float32)[:, None] * omega[None, :]
                pe = torch.zeros(num_positions, d_model)
                pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
                return pe
            """,
            {"test_sinusoidal_encoding"},
        ),
    },
    "scaling": {
        "experiment draws anew for the unscaled run": (
            "scaling_experiment",
            """
            def scaling_experiment(d_k_values, num_queries=200, num_keys=64, seed=0):
                g = torch.Generator().manual_seed(seed)
                table = {f"{s}_{m}": [] for m in ("scaled", "unscaled") for s in ("max_weight", "entropy", "grad_norm")}
                for d_k in d_k_values:
                    for mode, scale in (("scaled", True), ("unscaled", False)):
                        q, k = torch.randn(num_queries, d_k, generator=g), torch.randn(num_keys, d_k, generator=g)
                        for stat, value in saturation_stats(q, k, scale=scale).items():
                            table[f"{stat}_{mode}"].append(value)
                return {n: torch.tensor(v) for n, v in table.items()}
            """,
            {"test_scaling_experiment"},
        ),
    },
    "tiny_transformer": {
        "training on the same batch every step": (
            "train_reversal",
            """
            def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
                params = [t.requires_grad_(True) for t in p.values()]
                opt = torch.optim.Adam(params, lr=lr)
                g = torch.Generator().manual_seed(seed)
                V = p["embed.weight"].shape[0]
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                losses = []
                for _ in range(steps):
                    loss = F.cross_entropy(tiny_forward(x, p, num_heads).reshape(-1, V), y.reshape(-1))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(loss.item())
                return losses
            """,
            {"test_train_reversal"},
        ),
    },
}

# Correct numbers through a forbidden call: only the grader (and `qkv check`) sees these.
GRADER_ONLY = {
    ("soft_lookup", "cosine calls torch's cosine_similarity"),
    ("soft_lookup", "softmax calls torch.softmax"),
    ("soft_lookup", "softmax as a method, imported under another name"),
    ("soft_lookup", "softmax through getattr"),
    ("soft_lookup", "lookup calls the library"),
    ("qkv_scores", "calls PyTorch's fused attention"),
    ("qkv_scores", "calls the library's attention"),
    ("qkv_scores", "column form calls the library"),
    ("multihead", "split calls the library"),
    ("multihead", "attention through F.multi_head_attention_forward"),
    ("multihead", "module wraps torch.nn.MultiheadAttention"),
    ("positional", "encoding calls the library"),
    ("positional", "shift matrix calls the library"),
    ("masks", "causal mask from the library"),
    ("masks", "attention through qkv.softmax"),
    ("masks", "attention through torch.softmax"),
    ("conv_attention", "conv1d calls F.conv1d"),
    ("conv_attention", "conv2d through unfold"),
    ("tiny_transformer", "layer norm through F.layer_norm"),
    ("tiny_transformer", "block through the library's encoder layer"),
}

# (lab, mistake) -> the phrase of the message that names the step (the failing cell is checked separately).
MESSAGE = {
    ("soft_lookup", "dot scaled by d"): "expected [3, 0, 0]",
    ("soft_lookup", "dot summed over the wrong axis"): "expected [3, 0, 0]",
    ("soft_lookup", "cosine without the query's norm"): "length of the query too",
    ("soft_lookup", "cosine with squared norms"): "got [0.1",
    ("soft_lookup", "softmax without the max-subtraction (overflows)"): "subtract the maximum first",
    ("soft_lookup", "softmax over the first axis"): "normalise along the last axis",
    ("soft_lookup", "softmax with one global maximum (underflows)"): "each row's own maximum",
    ("soft_lookup", "softmax subtracting the minimum"): "subtract the maximum first",
    ("soft_lookup", "lookup multiplies by the temperature"): "divide the scores by it",
    ("soft_lookup", "lookup ignores the temperature"): "divide the scores by it",
    ("soft_lookup", "lookup returns (weights, out)"): "return (out, weights)",
    ("soft_lookup", "lookup with a default temperature of 0.5"): "the default temperature is 1.0",
    ("qkv_scores", "projections return transposes"): "expected shapes (3, 3), (3, 3), (3, 1)",
    ("qkv_scores", "keys and values swapped"): "expected shapes (3, 3), (3, 3), (3, 1)",
    ("qkv_scores", "keys projected with W_q"): "k is wrong",
    ("qkv_scores", "score matrix transposed (S, L)"): "expected shape (L, S)",
    ("qkv_scores", "score matrix already scaled"): "got [[0.707",
    ("qkv_scores", "attention without scaling"): "did you divide by sqrt(d_k)?",
    ("qkv_scores", "attention scaled by d_k"): "did you divide by sqrt(d_k)?",
    ("qkv_scores", "softmax over the queries (wrong axis)"): "(one query) must sum to 1",
    ("qkv_scores", "returns (weights, out)"): "shapes: weights",
    ("qkv_scores", "column softmax along the rows of A"): "a zero query averages the values",
    ("qkv_scores", "column scores Q^T K instead of K^T Q"): "shapes cannot be multiplied",
    ("qkv_scores", "column form without scaling"): "query 1: expected 1.27747",
    ("scaling", "variance of the scaled dot product"): "Var(q.k) / d_k should be close to 1",
    ("scaling", "variance of q . q"): "Var(q.k) / d_k should be close to 1",
    ("scaling", "variance over the wrong axis"): "Var(q.k) / d_k should be close to 1",
    ("scaling", "uniform draws instead of normal"): "Var(q.k) / d_k should be close to 1",
    ("scaling", "ignores the seed"): "use the seed",
    ("scaling", "scores divided by d_k"): "/ sqrt(4)",
    ("scaling", "scores not scaled"): "/ sqrt(4)",
    ("scaling", "scores transposed (k q^T)"): "expected (L, S)",
    ("scaling", "scores with .T (breaks batches)"): "transpose only the last two axes of k",
    ("scaling", "entropy without 0 log 0 = 0 (NaN when saturated)"): "0 log 0 should count as 0",
    ("scaling", "means instead of medians"): "that is the mean: take the median",
    ("scaling", "Jacobian without its diagonal"): "||J||_F = sqrt(3)/4",
    ("scaling", "scale flag ignored"): "scale=False must skip the division",
    ("scaling", "experiment scales both runs"): "without scaling, d_k = 1024 should saturate",
    ("scaling", "experiment divides by d_k"): "divide by sqrt(d_k) once",
    ("scaling", "experiment ignores num_keys and the seed"): "draw num_keys keys",
    ("scaling", "experiment draws anew for the unscaled run"): "on the same draws",
    ("scaling", "experiment draws fresh samples for the unscaled run"): "on the same draws",
    ("multihead", "split: reshape without the transpose"): "a reshape without the transpose mixes tokens",
    ("multihead", "split: heads interleaved (feature c to head c % H)"): "head 0 of token 0 should be features 0-3",
    ("multihead", "merge: reshape without the transpose"): "a reshape without the transpose mixes tokens",
    ("multihead", "merge: transpose of the wrong axes"): "its head outputs side by side",
    ("multihead", "attention scaled by sqrt(d_model) instead of sqrt(d_k)"): "equals what scaling by sqrt(d_model)",
    ("multihead", "attention softmax over the queries"): "the softmax runs over the last axis",
    ("multihead", "attention without W_o"): "then multiply by W_o",
    ("multihead", "attention with nn.Linear's convention (x @ W.T)"): "equals what projecting with x @ W.T",
    ("multihead", "module without biases"): "Unexpected key(s) in state_dict",
    ("multihead", "module: keys and values always from the query"): "cross-attention weights should be (B, H, L, S)",
    ("multihead", "module: weights averaged over heads"): "shapes: out",
    ("multihead", "module: values projected from the key"): "cross-attention output",
    ("positional", "sin and cos swapped"): "sin 0 = 0, cos 0 = 1",
    ("positional", "frequency exponent i/d instead of 2i/d"): "column 2 uses the frequency",
    ("positional", "sines in the first half, cosines in the second"): "sin 0 = 0, cos 0 = 1",
    ("positional", "positions counted from 1"): "position 0 is sin 0 = 0",
    ("positional", "angles in float32"): "compute the angles in float64",
    ("positional", "shift matrix transposed (rotates backwards)"): "[[cos 1, sin 1], [-sin 1, cos 1]]",
    ("positional", "shift matrix with the frequency of column j, not 2i"): "pe[p] @ M_k.T differs from pe[p + k]",
    ("positional", "offset dot summed over all columns' frequencies"): "d_model / 2 = 8",
    ("positional", "offset dot with sines"): "d_model / 2 = 8",
    ("positional", "positions added before shuffling"): "add the positions after shuffling",
    ("positional", "compares with the unpermuted output"): "permutation-equivariant",
    ("positional", "mean instead of max"): "that is the mean difference",
    ("masks", "causal mask inverted (the future, not the past)"): "query 0 sees only key 0",
    ("masks", "causal mask without the diagonal"): "query 0 sees only key 0",
    ("masks", "causal mask as 0/1 floats"): "a mask is boolean",
    ("masks", "local mask with < instead of <="): "the key itself and one neighbour on each side",
    ("masks", "local mask one-sided"): "the key itself and one neighbour on each side",
    ("masks", "graph mask transposed"): "row i is the node that attends",
    ("masks", "graph mask ignores self_loops=False"): "without self-loops",
    ("masks", "graph mask counts only positive weights as edges"): "a negative one too",
    ("masks", "attention with the mask inverted"): "did you invert the mask?",
    ("masks", "attention with -1e9 instead of -inf"): "with -1e9 instead of -inf",
    ("masks", "attention with -inf and NaN on fully masked rows"): "a fully masked row gave nan",
    (
        "masks",
        "attention zeroes the output of a fully masked row but leaves NaN weights",
    ): "a fully masked row gave nan",
    ("masks", "attention masks the weights after the softmax (not renormalised)"): "not the weights to 0 after it",
    ("masks", "attention not scaled"): "equals what no scaling gives",
    ("masks", "attention through torch's fused kernel"): "should have shape (4, 6)",
    ("masks", "attention with q @ k.T (2-D only)"): "k.T reverses every axis",
    ("masks", "attention softmax over the queries"): "the softmax runs over the last axis (keys)",
    ("masks", "attention with an all-False default mask"): "mask=None means every key may be seen",
    ("masks", "leak compares positions 0..t-1 only"): "compare positions 0..t, t included",
    ("masks", "leak changes position t too"): "the past must not move",
    ("masks", "leak measured over every position"): "the past must not move",
    ("conv_attention", "scores with i - j instead of j - i"): "the peak of row i is at j = i + shift",
    ("conv_attention", "scores with |.| instead of the square"): "the peak of row i is at j = i + shift",
    ("conv_attention", "shift by torch.roll (wraps around)"): "the last row has no key to copy",
    ("conv_attention", "shift pattern transposed"): "row i has its 1 at column i + shift",
    (
        "conv_attention",
        "conv1d with the kernel flipped (a true convolution)",
    ): "tap 0 of a size-3 kernel reads position i - 1",
    ("conv_attention", "conv1d with the tap matrix not transposed"): "@ weight[:, :, t].T",
    ("conv_attention", "conv1d wrapping around with roll"): "(0 before the start)",
    ("conv_attention", "conv2d shifting the flattened sequence (wraps across rows)"): "not the end of the previous row",
    ("conv_attention", "conv2d with rows and columns swapped"): "left neighbour",
    ("conv_attention", "receptive field multiplied in the wrong order"): "apply layer 0 first",
    ("conv_attention", "receptive field counted over columns"): "count along each row",
    ("conv_attention", "receptive field of the last layer only"): "three size-3 layers",
    ("tiny_transformer", "layer norm with the unbiased variance"): "divide by d, not d - 1",
    ("tiny_transformer", "layer norm with eps outside the square root"): "eps goes inside the square root",
    ("tiny_transformer", "layer norm over the first axis"): "mean 5, variance 4",
    ("tiny_transformer", "block in post-norm order"): "stage 1, the attention sub-layer with one head",
    ("tiny_transformer", "block adds the residual to the normalised x"): "equals what adding MHA's output to LN1(x)",
    ("tiny_transformer", "block ignores the mask"): "equals what ignoring the mask gives",
    ("tiny_transformer", "block with the mask inverted"): "equals what the inverted mask gives",
    (
        "tiny_transformer",
        "block splits heads by a reshape without the transpose",
    ): "stage 2, the attention sub-layer with two heads",
    ("tiny_transformer", "block attention not scaled by sqrt(d_k)"): "softmax(q k^T / sqrt(d_k)) v",
    ("tiny_transformer", "model without the positional encoding"): "is the positional encoding added",
    ("tiny_transformer", "model without the final layer norm"): "the final layer norm",
    ("tiny_transformer", "model does not pass the mask on"): "equals what ignoring the mask gives",
    ("tiny_transformer", "training with a causal mask"): "equals what a causal mask gives",
    ("tiny_transformer", "training with targets in another order than the logits"): "against y over every position",
    ("tiny_transformer", "training without the optimiser step"): "opt.step()",
    ("tiny_transformer", "training on the same batch every step"): "draw a fresh batch every step",
}
# Messages that must also say by how much: a number after "by up to".
WITH_NUMBERS = {key for key, phrase in MESSAGE.items() if phrase.startswith(("equals what", "stage "))}


@pytest.fixture(scope="module", params=LABS)
def lab_run(request):
    return LabRun(request.param)


def test_every_planted_mistake_fails_its_own_self_check_with_a_message_naming_the_step(lab_run):
    lab = lab_run.lab
    bugs = {**bug_table(lab), **EXTRA.get(lab, {})}
    problems = []
    for name, (function, source, losing) in bugs.items():
        if (lab, name) in GRADER_ONLY:
            continue
        if (lab, name) not in MESSAGE:
            problems.append(f"{name!r}: no expected message listed in MESSAGE (add one)")
            continue
        got = lab_run.run_with(function, source)
        if not got.cell:
            problems.append(f"{name!r}: passes every self-check")
        elif got.cell not in losing:
            problems.append(f"{name!r}: fails in {got.cell}, not in {sorted(losing)}: {got.message}")
        elif MESSAGE[(lab, name)] not in got.message:
            problems.append(f"{name!r}: the message lacks {MESSAGE[(lab, name)]!r}: {got.message}")
        elif (lab, name) in WITH_NUMBERS and "by up to" not in got.message:
            problems.append(f"{name!r}: the message does not say by how much: {got.message}")
    assert not problems, f"{lab}:\n" + "\n".join(problems)


def test_the_tables_list_only_existing_mistakes():
    known = {(lab, name) for lab in LABS for name in {**bug_table(lab), **EXTRA.get(lab, {})}}
    assert GRADER_ONLY <= known, sorted(GRADER_ONLY - known)
    assert set(MESSAGE) <= known, sorted(set(MESSAGE) - known)


CJK = re.compile(r"[\u4e00-\u9fff]")
# What PyTorch itself raises (a bug that breaks a call before any self-check) is PyTorch's English in both labs.
PYTORCH_RAISES = re.compile(r"^(RuntimeError|IndexError|TypeError|ValueError):")


@pytest.fixture(scope="module", params=LABS)
def chinese_lab_run(request):
    return LabRun(request.param, "zh_CN")


def test_every_planted_mistake_fails_the_chinese_lab_with_a_chinese_message(chinese_lab_run):
    """The Chinese lab (its messages, hints and qkv.selfcheck's words from the catalogs) catches the same
    mistakes in the same cells, and says so in Chinese: no English sentence of ours left in the message."""
    lab = chinese_lab_run.lab
    english = LabRun(lab)
    # Our English: the lab's code messages and qkv.selfcheck's (a PyTorch error quoted in a message is not ours).
    ours = [*i18n.code_messages(solution_notebook(lab)), *selfcheck.MESSAGES]
    bugs = {**bug_table(lab), **EXTRA.get(lab, {})}
    problems = []
    for name, (function, source, losing) in bugs.items():
        if (lab, name) in GRADER_ONLY:
            continue
        got, en = chinese_lab_run.run_with(function, source), english.run_with(function, source)
        if got.cell != en.cell or got.cell not in losing:
            problems.append(f"{name!r}: fails in {got.cell!r}, the English lab in {en.cell!r}: {got.message}")
        elif PYTORCH_RAISES.match(en.message):
            if got.message != en.message:
                problems.append(f"{name!r}: PyTorch's error differs: {got.message}")
        elif not CJK.search(got.message):
            problems.append(f"{name!r}: the message is not Chinese: {got.message}")
        elif (lab, name) in WITH_NUMBERS and "最多相差" not in got.message:
            problems.append(f"{name!r}: the message does not say by how much: {got.message}")
        else:
            left = [s for s in SENTENCE.findall(got.message) if any(s in text for text in ours)]
            if left:
                problems.append(f"{name!r}: English of ours left in the message: {left}: {got.message}")
    assert not problems, f"{lab}:\n" + "\n".join(problems)
