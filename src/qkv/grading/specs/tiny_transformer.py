"""Grading spec for the lab ``tiny_transformer``: five autograded items and one written answer.

* ``layer_norm``: against ``torch.nn.functional.layer_norm`` in float64, with variances comparable to ``eps``.
* ``encoder_block``, ``tiny_forward``: against the library's modules loaded with the **same weights** (layer norms
  randomised, so a missing gamma or beta shows), in float64, with no mask and causal, padding and local masks.
* ``train_reversal``: the sandbox trains fresh weights (80 steps, with stand-ins for the student's failing parts: one
  bug costs one item); the grader needs ``THRESHOLD`` accuracy of the library's model with those weights on 512
  fresh sequences (the solution: 0.997 or more). ``check`` grades it (``atol = 1e300``: only shapes, finite).
* ``sample``: the ids, exactly, against :func:`qkv.decoder.sample` (float64, same seed; one ``torch.multinomial``
  per token draws the same ids in float32 and float64, 0 of 300 sequences differed); weights scaled by 5 make a
  missing causal mask change the text (19 of 20 seeded models at temperature 1.5).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import qkv
from qkv.decoder import sample
from qkv.grading.messages import TRAINED_TOO_LITTLE, Msg
from qkv.grading.spec import Case, Item, LabSpec, Manual, draw_seed, randn

FORBID = tuple(  # what would do an exercise: the library's and PyTorch's blocks, attention and layer norms
    "qkv.TransformerEncoderLayer qkv.TinyTransformer qkv.MultiHeadAttention torch.nn.TransformerEncoderLayer "
    "torch.nn.TransformerEncoder torch.nn.Transformer torch.nn.MultiheadAttention torch.nn.LayerNorm "
    "torch.nn.functional.multi_head_attention_forward torch.nn.functional.layer_norm torch.layer_norm "
    "torch.native_layer_norm".split()
)
THRESHOLD = 0.9  # accuracy of the trained model on fresh sequences
TRAIN = {"vocab_size": 10, "d_model": 32, "num_heads": 2, "num_layers": 1, "d_ff": 64, "seq_len": 8, "steps": 80}


def _randomise_norms(state: dict, g: torch.Generator) -> dict:
    """Layer-norm scales near 1 and shifts near 0, but not exactly: a missing gamma or beta then shows."""
    for name, t in state.items():
        if "norm" in name:
            state[name] = t + 0.3 * randn(g, *t.shape)
    return state


def _params(g: torch.Generator, module, *sizes, norms=True, **kwargs) -> dict:
    """The weights of ``module(*sizes, **kwargs)`` built from a seed drawn from ``g``, layer norms randomised."""
    with torch.random.fork_rng():
        torch.manual_seed(draw_seed(g))
        state = {name: t.detach().clone() for name, t in module(*sizes, **kwargs).state_dict().items()}
    return _randomise_norms(state, g) if norms else state


_model_params = lambda g, *sizes, norms=True: _params(g, qkv.TinyTransformer, *sizes, norms=norms, max_len=64)
_block_params = lambda g, *sizes: _params(g, qkv.TransformerEncoderLayer, *sizes)  # the modules' own arguments


def _library_model(p: dict, num_heads: int, state: dict | None = None):
    """``qkv.TinyTransformer`` in float64 with the shapes of the weights ``p``, loaded with ``state`` (default p)."""
    V, d_model = p["embed.weight"].shape
    num_layers = len({name.split(".")[1] for name in p if name.startswith("layers.")})
    d_ff = p["layers.0.linear1.weight"].shape[0]
    model = qkv.TinyTransformer(V, d_model, num_heads, num_layers, d_ff, max_len=64, impl="explicit").double()
    model.load_state_dict(p if state is None else state)
    return model


# The stand-ins for the student's helpers when those are wrong (they run in the sandbox).
def layer_norm(x, gamma, beta, eps=1e-5):
    import torch

    mu = x.mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps) + beta


def encoder_block(x, p, num_heads, mask=None):
    import torch

    import qkv

    def linear(h, name):
        return h @ p[f"{name}.weight"].T + p[f"{name}.bias"]

    h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
    q, k, v = (qkv.split_heads(linear(h, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
    x = x + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v, mask)), "self_attn.out_proj")
    h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
    return x + linear(torch.relu(linear(h, "linear1")), "linear2")


def tiny_forward(tokens, p, num_heads, mask=None):
    import qkv

    embed = p["embed.weight"]  # (V, d_model)
    h = embed[tokens] + qkv.sinusoidal_positional_encoding(tokens.shape[-1], embed.shape[1])  # (B, L, d_model)
    for layer in sorted({name.split(".")[1] for name in p if name.startswith("layers.")}, key=int):
        prefix = f"layers.{layer}."
        h = encoder_block(h, {n[len(prefix) :]: t for n, t in p.items() if n.startswith(prefix)}, num_heads, mask)
    h = layer_norm(h, p["final_norm.weight"], p["final_norm.bias"])
    return h @ p["head.weight"].T + p["head.bias"]  # (B, L, V)


def train_and_return(train_reversal, p, num_heads, seq_len, steps, **kwargs):
    """Runs in the sandbox: the student's training on a copy of the weights p; the losses and trained weights."""
    import torch

    torch.set_num_threads(1)  # tiny tensors: one thread is fastest, and jobs run side by side
    p = {name: t.clone() for name, t in p.items()}
    losses = train_reversal(p, num_heads, seq_len, steps, **kwargs)
    if len(losses) != steps or not all(isinstance(v, float) for v in losses):
        raise TypeError(f"return a list of {steps} losses as Python floats (use loss.item()); got {losses!r:.100}")
    weights = [p[name].detach().clone() for name in sorted(p)]
    return [torch.tensor(list(losses), dtype=torch.float64)] + [weights[i : i + 8] for i in range(0, len(weights), 8)]


def sample_and_return(sample, p, num_heads, prompt_ids, n_new, temperature, seed):
    """Runs in the sandbox: the student's sampling loop with a generator seeded from the case."""
    import torch

    return sample(p, num_heads, prompt_ids, n_new, temperature, generator=torch.Generator().manual_seed(seed))


HELPERS = (layer_norm, encoder_block, tiny_forward)


# --- exercise 1: layer norm --------------------------------------------------------------------------------
def norm_cases(g: torch.Generator) -> list[Case]:
    return [
        Case((randn(g, 4, 8, scale=3.0), randn(g, 8), randn(g, 8)), label="4 tokens of width 8"),
        Case((randn(g, 2, 5, 16) + 4.0, randn(g, 16), randn(g, 16)), label="a batch (2, 5, 16) with a nonzero mean"),
        Case((randn(g, 3, 16, scale=0.01), randn(g, 16), randn(g, 16)), label="a variance close to eps"),
        Case((randn(g, 6, 5), randn(g, 5), randn(g, 5)), {"eps": 0.1}, label="eps = 0.1"),
    ]


def norm_reference(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


# --- exercise 2: the encoder block -------------------------------------------------------------------------
def block_cases(g: torch.Generator) -> list[Case]:
    return [
        Case(
            (randn(g, 3, 5, 16), _block_params(g, 16, 2, 32), 2, None),
            label="B = 3, L = 5, d_model = 16, 2 heads, no mask",
        ),
        Case((randn(g, 2, 7, 24), _block_params(g, 24, 3, 40), 3, qkv.causal_mask(7)), label="3 heads, a causal mask"),
        Case(
            (randn(g, 3, 6, 16), _block_params(g, 16, 4, 24), 4, qkv.padding_mask([6, 4, 2])),
            label="4 heads, a padding mask (B, 1, 1, L)",
        ),
        Case(
            (randn(g, 2, 8, 12, scale=2.0), _block_params(g, 12, 2, 20), 2, qkv.local_mask(8, 2)),
            label="a local mask, larger inputs",
        ),
    ]


def block_reference(x, p, num_heads, mask=None):
    d_model, d_ff = x.shape[-1], p["linear1.weight"].shape[0]
    layer = qkv.TransformerEncoderLayer(d_model, num_heads, d_ff, impl="explicit").double()
    layer.load_state_dict(p)
    with torch.no_grad():
        return layer(x, mask=mask)[0]  # (B, L, d_model)


# --- exercise 3: the whole model ---------------------------------------------------------------------------
def forward_cases(g: torch.Generator) -> list[Case]:
    def tokens(V, B, L):
        return torch.randint(V, (B, L), generator=g)

    return [
        Case((tokens(7, 4, 6), _model_params(g, 7, 16, 2, 2, 32), 2, None), label="2 blocks, V = 7, L = 6, no mask"),
        Case(
            (tokens(5, 2, 9), _model_params(g, 5, 24, 3, 3, 16), 3, qkv.causal_mask(9)), label="3 blocks, a causal mask"
        ),
        Case(
            (tokens(9, 3, 5), _model_params(g, 9, 16, 2, 1, 32), 2, qkv.padding_mask([5, 3, 1])),
            label="1 block, a padding mask",
        ),
    ]


def forward_reference(tokens, p, num_heads, mask=None):
    with torch.no_grad():
        return _library_model(p, num_heads)(tokens, mask=mask)[0]  # logits (B, L, V)


# --- exercise 4: training ----------------------------------------------------------------------------------
def train_cases(g: torch.Generator) -> list[Case]:
    c = TRAIN
    p = _model_params(g, c["vocab_size"], c["d_model"], c["num_heads"], c["num_layers"], c["d_ff"], norms=False)
    return [
        Case(
            (p, c["num_heads"], c["seq_len"], c["steps"]),
            {"seed": draw_seed(g)},
            label=f"{c['steps']} steps on reversal of length {c['seq_len']} from fresh weights, then a test on 512 new sequences",
        )
    ]


def train_reference(p, num_heads, seq_len, steps, seed):
    names = sorted(p)
    weights = [p[name] for name in names]  # only the shapes matter here (atol = 1e300); `check` grades the result
    return [torch.zeros(steps, dtype=torch.float64)] + [weights[i : i + 8] for i in range(0, len(weights), 8)]


def train_check(case: Case, got, expected) -> Msg | None:
    """In the grader: load the trained weights into the library's model and measure the accuracy."""
    p, num_heads, seq_len, steps = case.args
    state = dict(zip(sorted(p), (torch.from_numpy(a.copy()) for group in got[1:] for a in group)))
    model = _library_model(p, num_heads, state)
    gen = torch.Generator().manual_seed(case.kwargs["seed"] + 1)
    accuracy = model.accuracy(*qkv.reversal_batch(512, seq_len, p["embed.weight"].shape[0], generator=gen))
    if not math.isfinite(accuracy) or accuracy < THRESHOLD:
        return TRAINED_TOO_LITTLE(accuracy=f"{accuracy:.0%}", threshold=f"{THRESHOLD:.0%}")
    return None


# --- exercise 5: the sampling loop ------------------------------------------------------------------------
def sample_cases(g: torch.Generator) -> list[Case]:
    def case(V, d_model, num_heads, num_layers, d_ff, prompt_len, n_new, temperature, label):
        p = _model_params(g, V, d_model, num_heads, num_layers, d_ff)
        # sharper attention than at initialisation: a missing causal mask then changes the text
        p = {n: 5 * t if n == "embed.weight" or n.endswith("proj.weight") else t for n, t in p.items()}
        prompt = torch.randint(V, (prompt_len,), generator=g)
        return Case((p, num_heads, prompt, n_new, temperature, draw_seed(g)), label=label)

    return [
        case(11, 16, 2, 2, 32, 3, 24, 0.0, "greedy (temperature 0), 2 blocks, 24 new tokens"),
        case(9, 24, 3, 3, 16, 1, 40, 0.7, "temperature 0.7, 3 blocks, a one-token prompt, 40 new tokens"),
        case(13, 16, 2, 2, 32, 5, 40, 1.5, "temperature 1.5, 2 blocks, 40 new tokens"),
    ]


def sample_reference(p, num_heads, prompt_ids, n_new, temperature, seed):
    model = _library_model(p, num_heads)
    return sample(model.eval(), prompt_ids, n_new, temperature, generator=torch.Generator().manual_seed(seed))


SPEC = LabSpec(
    lab="tiny_transformer",
    items=(
        Item(
            "test_layer_norm",
            2,
            "layer_norm",
            norm_cases,
            norm_reference,
            forbid=FORBID,
            describe="normalise the last axis with the biased variance and eps inside the square root, then gamma and beta",
        ),
        Item(
            "test_encoder_block",
            4,
            "encoder_block",
            block_cases,
            block_reference,
            atol=1e-4,
            forbid=FORBID,
            helpers=HELPERS,
            describe="x + MHA(LN1(x)), then x + FFN(LN2(x)), with the mask applied in every head",
        ),
        Item(
            "test_tiny_forward",
            3,
            "tiny_forward",
            forward_cases,
            forward_reference,
            atol=1e-4,
            forbid=FORBID,
            helpers=HELPERS,
            describe="embeddings plus the positional encoding, the blocks (with the mask), the final layer norm and the head",
        ),
        Item(
            "test_train_reversal",
            3,
            "train_reversal",
            train_cases,
            train_reference,
            atol=1e300,
            forbid=FORBID,
            call=train_and_return,
            helpers=HELPERS,
            check=train_check,
            describe=f"the trained model reverses at least {THRESHOLD:.0%} of the tokens of new sequences",
        ),
        Item(
            "test_sample",
            2,
            "sample",
            sample_cases,
            sample_reference,
            atol=0.0,
            forbid=(*FORBID, "qkv.decoder.sample"),
            call=sample_and_return,
            helpers=HELPERS,
            describe="the ids of greedy writing and of seeded draws from softmax(last scores / T), the prompt first",
        ),
        Manual("written_positions", 3, title="Why reversal needs positions, and no causal mask"),
    ),
)
