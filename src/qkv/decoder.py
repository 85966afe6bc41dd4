"""A character-level decoder: the library's :class:`qkv.TinyTransformer` under a causal mask, trained to predict
each next character of a text and sampled one character at a time; and the checkpoints the Transformer chapter
loads (``qkv/data/decoder_<corpus>.pt``, written by ``tools/train_decoder.py``).

Shapes: ``N`` characters of a text, ``B`` batch, ``L`` positions, ``V`` vocabulary.
"""

from __future__ import annotations

import io
import math
from importlib import resources

import torch
import torch.nn.functional as F

from .corpora import CORPORA, CharVocab
from .encoder import TinyTransformer
from .masks import causal_mask
from .validate import require, require_choice, require_int, require_tensor

__all__ = ["lm_batch", "load_decoder", "next_char_loss", "sample", "save_decoder", "train_lm"]


def lm_batch(ids: torch.Tensor, batch_size: int, seq_len: int, *, generator: torch.Generator | None = None):
    """Random windows of a text's ids ``(N,)``: inputs ``x`` and targets ``y``, both ``(B, L)``, where ``y[:, i]``
    is the character that follows ``x[:, i]``.

    Examples
    --------
    >>> import torch
    >>> from qkv.decoder import lm_batch
    >>> x, y = lm_batch(torch.arange(10), 2, 4, generator=torch.Generator().manual_seed(0))
    >>> bool((y[:, :-1] == x[:, 1:]).all()), bool((y == x + 1).all())
    (True, True)
    """
    ids = require_tensor("ids", ids)
    require(ids.dim() == 1, "ids", "a 1-D tensor of token ids (N,)", ids)
    for name, n in (("batch_size", batch_size), ("seq_len", seq_len)):
        require_int(name, n)
    require(len(ids) > seq_len, "ids", f"more than seq_len={seq_len} ids", ids)
    starts = torch.randint(len(ids) - seq_len, (batch_size,), generator=generator)  # (B,)
    windows = ids[starts[:, None] + torch.arange(seq_len + 1)]  # (B, L + 1)
    return windows[:, :-1], windows[:, 1:]


def next_char_loss(model: TinyTransformer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the next characters ``y`` given ``x`` (both ``(B, L)``), under a causal mask:
    position ``i`` sees positions ``0..i`` only, so it cannot read the answer."""
    logits, _ = model(x, mask=causal_mask(x.shape[1], device=x.device))  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


def train_lm(
    model: TinyTransformer,
    ids: torch.Tensor,
    steps: int,
    *,
    batch_size: int = 32,
    seq_len: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` in place with AdamW on random windows of ``ids`` (the learning rate falls from ``lr`` to
    ``lr / 10`` along a cosine); return the loss of each step (nats per character)."""
    require_int("steps", steps, minimum=0)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    device = next(model.parameters()).device
    model.train()
    losses = []
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * (0.55 + 0.45 * math.cos(math.pi * step / steps))  # lr -> lr / 10
        x, y = lm_batch(ids, batch_size, seq_len, generator=gen)  # (B, L) each
        loss = next_char_loss(model, x.to(device), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def sample(
    model: TinyTransformer,
    prompt_ids: torch.Tensor,
    n_new: int,
    temperature: float = 1.0,
    *,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    r"""Extend ``prompt_ids`` ``(N,)`` by ``n_new`` tokens, one at a time; return all ``N + n_new`` ids.

    Each step runs the model on the last ``model.max_len`` ids under a causal mask and takes the scores of the
    last position, :math:`s`, for the next token: the most likely one if ``temperature`` is 0 (greedy), else a
    draw from :math:`\mathrm{softmax}(s / T)` with ``torch.multinomial(probs, 1, generator=generator)``. A low
    temperature sharpens the distribution, a high one flattens it.

    Examples
    --------
    >>> import torch, qkv
    >>> from qkv.decoder import sample
    >>> model = qkv.TinyTransformer(vocab_size=5, d_model=8, num_heads=2, num_layers=1, max_len=16).eval()
    >>> sample(model, torch.tensor([1, 2]), 3, temperature=0).shape
    torch.Size([5])
    """
    prompt_ids = require_tensor("prompt_ids", prompt_ids)
    require(prompt_ids.dim() == 1 and len(prompt_ids) > 0, "prompt_ids", "a non-empty 1-D tensor (N,)", prompt_ids)
    require_int("n_new", n_new, minimum=0)
    require(temperature >= 0, "temperature", "a number >= 0", repr(temperature))
    ids = prompt_ids
    for _ in range(n_new):
        context = ids[-model.max_len :]  # (L,), at most max_len
        logits, _ = model(context[None], mask=causal_mask(len(context), device=ids.device))  # (1, L, V)
        scores = logits[0, -1]  # (V,): the next token's scores
        if temperature == 0:
            next_id = scores.argmax().view(1)
        else:
            next_id = torch.multinomial(torch.softmax(scores / temperature, dim=-1), 1, generator=generator)
        ids = torch.cat([ids, next_id])  # (len + 1,)
    return ids


def save_decoder(path, model: TinyTransformer, vocab: CharVocab, config: dict, **meta) -> None:
    """Write a checkpoint: ``config`` (the TinyTransformer's arguments), the vocabulary, the weights in float16
    (half the bytes; the sampled text does not change visibly) and ``meta`` (how it was trained)."""
    state = {name: t.detach().to("cpu", torch.float16) for name, t in model.state_dict().items()}
    torch.save({"config": config, "chars": "".join(vocab.chars), "state": state, "meta": meta}, path)


def load_decoder(name: str) -> tuple[TinyTransformer, CharVocab, dict]:
    """The decoder trained on a shipped corpus (``"sonnets"`` or ``"tang"``): ``(model, vocab, meta)``, the model
    in float32 and eval mode, ``meta`` how it was trained (``config``, the model's arguments; steps, seconds,
    losses, ...).

    Examples
    --------
    >>> from qkv.decoder import load_decoder
    >>> model, vocab, meta = load_decoder("sonnets")
    >>> len(vocab) == model.vocab_size
    True
    """
    require_choice("name", name, CORPORA)
    blob = (resources.files("qkv") / "data" / f"decoder_{name}.pt").read_bytes()
    checkpoint = torch.load(io.BytesIO(blob), weights_only=True)
    vocab = CharVocab(checkpoint["chars"])
    model = TinyTransformer(len(vocab), **checkpoint["config"])
    model.load_state_dict({k: v.float() for k, v in checkpoint["state"].items()})
    return model.eval(), vocab, {"config": checkpoint["config"], **checkpoint["meta"]}
