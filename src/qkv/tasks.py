"""Toy sequence tasks the chapters and labs train on: generated on the fly, never downloaded."""

from __future__ import annotations

import torch

from .validate import require, require_int

__all__ = ["reversal_batch", "sorting_batch"]


def _tokens(batch_size: int, seq_len: int, vocab_size: int, generator: torch.Generator | None) -> torch.Tensor:
    for name, n in (("batch_size", batch_size), ("seq_len", seq_len), ("vocab_size", vocab_size)):
        require_int(name, n)
    return torch.randint(vocab_size, (batch_size, seq_len), generator=generator)  # (B, L)


def reversal_batch(batch_size: int, seq_len: int, vocab_size: int, *, generator: torch.Generator | None = None):
    """Random token sequences ``x`` (B, L) and their reversals ``y`` (B, L): ``y[:, i] = x[:, L - 1 - i]``.

    Output ``i`` must find input ``L - 1 - i``: a task that needs position, not content.

    Examples
    --------
    >>> import torch, qkv
    >>> x, y = qkv.reversal_batch(2, 4, vocab_size=10, generator=torch.Generator().manual_seed(0))
    >>> bool((y == x.flip(-1)).all()), x.shape
    (True, torch.Size([2, 4]))
    """
    x = _tokens(batch_size, seq_len, vocab_size, generator)
    return x, x.flip(-1)


def sorting_batch(batch_size: int, seq_len: int, vocab_size: int, *, generator: torch.Generator | None = None):
    """Random token sequences ``x`` (B, L) and the same tokens sorted ascending ``y`` (B, L).

    Output ``i`` must compare every input with every other: a task that needs content.

    Examples
    --------
    >>> import torch, qkv
    >>> x, y = qkv.sorting_batch(1, 5, vocab_size=10, generator=torch.Generator().manual_seed(0))
    >>> bool((y[:, 1:] >= y[:, :-1]).all()), sorted(x[0].tolist()) == y[0].tolist()
    (True, True)
    """
    x = _tokens(batch_size, seq_len, vocab_size, generator)
    return x, x.sort(dim=-1).values


# Four 3x3 patterns for the image task: cross, plus, ring, corner.
_PATTERNS = (
    ((1, 0, 1), (0, 1, 0), (1, 0, 1)),
    ((0, 1, 0), (1, 1, 1), (0, 1, 0)),
    ((1, 1, 1), (1, 0, 1), (1, 1, 1)),
    ((1, 1, 0), (1, 0, 0), (0, 0, 0)),
)


def pattern_images(n: int, *, side: int = 8, noise: float = 0.3, generator: torch.Generator | None = None):
    """``n`` noisy images ``(n, 1, side, side)``, each with one of four 3x3 patterns at a random place.

    The label ``y`` (n,) says which pattern (0 cross, 1 plus, 2 ring, 3 corner); the pattern's top-left
    corner is uniform over the ``(side - 2) ** 2`` places where it fits, and Gaussian noise of standard
    deviation ``noise`` is added to every pixel. A task where *what* matters and *where* does not: the
    assumption a convolution with a max over positions builds in.

    Examples
    --------
    >>> import torch
    >>> from qkv.tasks import pattern_images
    >>> x, y = pattern_images(3, noise=0.0, generator=torch.Generator().manual_seed(0))
    >>> x.shape, y.shape, sorted(x.unique().tolist())
    (torch.Size([3, 1, 8, 8]), torch.Size([3]), [0.0, 1.0])
    """
    require_int("n", n)
    require_int("side", side, minimum=3)
    require(noise >= 0, "noise", "a non-negative float", repr(noise))
    import torch.nn.functional as F

    patterns = torch.tensor(_PATTERNS, dtype=torch.float32)  # (4, 3, 3)
    y = torch.randint(len(patterns), (n,), generator=generator)  # (n,)
    places = (side - 2) ** 2
    where = torch.randint(places, (n,), generator=generator)  # (n,)
    spot = F.one_hot(where, places).float().view(n, 1, side - 2, side - 2)
    drawn = F.conv_transpose2d(spot, patterns[None])  # (n, 4, side, side): every pattern at the spot
    images = drawn[torch.arange(n), y][:, None]  # (n, 1, side, side): the labelled one
    return images + noise * torch.randn(n, 1, side, side, generator=generator), y


def pattern_bayes_logits(x: torch.Tensor, *, noise: float) -> torch.Tensor:
    """The log-posterior of each pattern given images from :func:`pattern_images`, up to a constant.

    The best any classifier can do: the task's generative model is known (a uniform pattern at a uniform
    place plus Gaussian noise), so ``p(pattern | image)`` is the sum over places of the Gaussian
    likelihood, computed exactly. ``argmax`` of the result is the Bayes classifier; its accuracy on many
    images estimates the Bayes accuracy, the ceiling for every model. Input ``(n, 1, side, side)``,
    output ``(n, 4)``.

    Examples
    --------
    >>> import torch
    >>> from qkv.tasks import pattern_bayes_logits, pattern_images
    >>> x, y = pattern_images(200, noise=0.1, generator=torch.Generator().manual_seed(0))
    >>> bool((pattern_bayes_logits(x, noise=0.1).argmax(-1) == y).all())
    True
    """
    require(noise > 0, "noise", "a positive float", repr(noise))
    import torch.nn.functional as F

    patterns = torch.tensor(_PATTERNS, dtype=x.dtype)[:, None]  # (4, 1, 3, 3)
    # log N(x; T, noise^2 I) = (2 x.T - |T|^2) / (2 noise^2) + terms that do not depend on the pattern
    match = F.conv2d(x, patterns).flatten(2)  # (n, 4, places): x . T at every place
    energy = patterns.flatten(1).pow(2).sum(-1)  # (4,): |T|^2
    return torch.logsumexp((2 * match - energy[:, None]) / (2 * noise**2), dim=-1)  # (n, 4)


def pattern_cnn(width: int = 8, num_classes: int = 4):
    """A tiny CNN for :func:`pattern_images`: two 3x3 convolutions, a max over positions, a linear head.

    Input ``(B, 1, side, side)``, output logits ``(B, num_classes)``.

    Examples
    --------
    >>> import torch
    >>> from qkv.tasks import pattern_cnn
    >>> pattern_cnn()(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 4])
    """
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1),
        nn.ReLU(),  # (B, width, side, side)
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),  # (B, width): max over positions
        nn.Linear(width, num_classes),
    )


def pattern_vit(d_model: int = 16, *, patch: int = 2, side: int = 8, num_heads: int = 2, num_classes: int = 4):
    """A tiny vision Transformer for :func:`pattern_images`.

    Non-overlapping ``patch x patch`` patches, a linear embedding plus a learned positional embedding,
    one :class:`qkv.TransformerEncoderLayer`, layer norm, a mean over tokens and a linear head.
    Input ``(B, 1, side, side)``, output logits ``(B, num_classes)``.

    Examples
    --------
    >>> import torch
    >>> from qkv.tasks import pattern_vit
    >>> pattern_vit()(torch.zeros(2, 1, 8, 8)).shape
    torch.Size([2, 4])
    """
    from torch import nn

    from .encoder import TransformerEncoderLayer

    require(
        isinstance(side, int) and isinstance(patch, int) and patch > 0 and side % patch == 0,
        "patch",
        f"a positive int dividing side={side!r}",
        repr(patch),
    )

    class PatchTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(patch * patch, d_model)
            self.pos = nn.Parameter(0.1 * torch.randn((side // patch) ** 2, d_model))
            self.block = TransformerEncoderLayer(d_model, num_heads, 2 * d_model)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, num_classes)

        def forward(self, x):  # (B, 1, side, side)
            patches = x.unfold(2, patch, patch).unfold(3, patch, patch)  # (B, 1, n, n, patch, patch)
            patches = patches.reshape(len(x), -1, patch * patch)  # (B, tokens, patch * patch)
            h, _ = self.block(self.embed(patches) + self.pos)  # (B, tokens, d_model)
            return self.head(self.norm(h).mean(1))  # (B, num_classes)

    return PatchTransformer()


def fit_classifier(
    model,
    x,
    y,
    x_val,
    y_val,
    *,
    batch: int = 64,
    lr: float = 1e-2,
    max_steps: int = 3000,
    eval_every: int = 25,
    patience: int = 8,
    seed: int = 0,
    on_evaluation=None,
):
    """Train ``model`` on ``(x, y)`` with AdamW until the validation accuracy stops improving.

    Every ``eval_every`` steps the accuracy on ``(x_val, y_val)`` is measured; training stops after
    ``patience`` evaluations without improvement (or at ``max_steps``) and the best weights are restored.
    Minibatches of ``batch`` are drawn with replacement from a generator seeded with ``seed``.
    ``on_evaluation(model, step, accuracy)``, if given, is called after each evaluation (the model in eval
    mode): a caller can watch the run, e.g. to see where a shorter patience would have stopped it.
    Returns ``(model, steps)``: the trained model (in eval mode) and the number of steps taken.

    Examples
    --------
    >>> import torch
    >>> from qkv.tasks import fit_classifier, pattern_cnn, pattern_images
    >>> gen = torch.Generator().manual_seed(0)
    >>> (x, y), (xv, yv) = pattern_images(64, generator=gen), pattern_images(64, generator=gen)
    >>> model, steps = fit_classifier(pattern_cnn(), x, y, xv, yv, max_steps=50)
    >>> 0 < steps <= 50
    True
    """
    import copy

    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-2)
    best, best_state, since, step = -1.0, None, 0, 0
    while step < max_steps and since < patience:
        model.train()
        for _ in range(min(eval_every, max_steps - step)):
            i = torch.randint(len(x), (batch,), generator=gen)
            loss = F.cross_entropy(model(x[i]), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        model.eval()
        with torch.no_grad():
            acc = (model(x_val).argmax(-1) == y_val).float().mean().item()
        if on_evaluation is not None:
            on_evaluation(model, step, acc)
        if acc > best:
            best, best_state, since = acc, copy.deepcopy(model.state_dict()), 0
        else:
            since += 1
    model.load_state_dict(best_state)
    return model.eval(), step
