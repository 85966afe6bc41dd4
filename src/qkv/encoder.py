"""A Transformer encoder built from the library's parts: multi-head attention, a feed-forward
network, residual connections and layer norm (Vaswani et al., 2017, section 3.1).

Shapes (batch-first): ``B`` batch, ``L`` positions, ``H`` heads, ``d_model`` width, ``V`` vocabulary.
Masks follow the library's convention: boolean, True = may attend.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import Impl
from .multihead import MultiHeadAttention
from .positional import sinusoidal_positional_encoding
from .validate import require, require_int, require_tensor

__all__ = ["TinyTransformer", "TransformerEncoderLayer"]


class TransformerEncoderLayer(nn.Module):
    r"""One encoder block: self-attention, then a position-wise feed-forward network.

    Post-norm, the paper's arrangement (``norm_first=False``):

    .. math:: x \leftarrow \mathrm{LN}(x + \mathrm{MHA}(x)), \qquad x \leftarrow \mathrm{LN}(x + \mathrm{FFN}(x))

    Pre-norm (``norm_first=True``, the default here: it trains without learning-rate warm-up):

    .. math:: x \leftarrow x + \mathrm{MHA}(\mathrm{LN}(x)), \qquad x \leftarrow x + \mathrm{FFN}(\mathrm{LN}(x))

    with :math:`\mathrm{FFN}(x) = \max(0, x W_1 + b_1) W_2 + b_2`, ``d_ff`` wide. It computes the same
    function as ``torch.nn.TransformerEncoderLayer(batch_first=True, activation="relu")`` with the
    same ``norm_first`` (the tests copy the weights across and compare).

    Parameters
    ----------
    d_model : int
        Width of the inputs and outputs.
    num_heads : int
        Number of attention heads; must divide ``d_model``.
    d_ff : int, optional
        Width of the feed-forward hidden layer; default ``4 * d_model``.
    dropout : float
        Dropout on the attention and feed-forward outputs (before each residual sum).
    norm_first : bool
        Pre-norm if True, post-norm (the paper's) if False.
    impl : {"auto", "explicit", "fused"}
        Passed to :class:`qkv.MultiHeadAttention`.

    Examples
    --------
    >>> import torch, qkv
    >>> layer = qkv.TransformerEncoderLayer(d_model=16, num_heads=4)
    >>> out, w = layer(torch.randn(2, 5, 16), need_weights=True)
    >>> out.shape, w.shape
    (torch.Size([2, 5, 16]), torch.Size([2, 4, 5, 5]))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = True,
        impl: Impl = "auto",
    ) -> None:
        super().__init__()
        require_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else d_ff
        require_int("d_ff", d_ff)
        require(
            isinstance(dropout, (int, float)) and not isinstance(dropout, bool) and 0.0 <= dropout < 1.0,
            "dropout",
            "a float in [0, 1)",
            repr(dropout),
        )
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, impl=impl)
        self.linear1 = nn.Linear(d_model, d_ff)  # W_1
        self.linear2 = nn.Linear(d_ff, d_model)  # W_2
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def _attend(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool):
        out, weights = self.self_attn(x, mask=mask, need_weights=need_weights)  # (B, L, d_model)
        return self.dropout(out), weights

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.linear2(F.relu(self.linear1(x))))  # (B, L, d_ff) -> (B, L, d_model)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Encode ``x`` (B, L, d_model); ``mask`` as in MultiHeadAttention.

        Returns ``(out, weights)``: out ``(B, L, d_model)``, weights
        ``(B, H, L, L)`` if ``need_weights`` else ``None``.
        """
        x = require_tensor("x", x, floating=True)
        d_model = self.self_attn.d_model
        ok = x.dim() == 3 and x.shape[-1] == d_model
        require(ok, "x", f"(B, L, d_model={d_model})", x)
        if self.norm_first:  # pre-norm
            attn, weights = self._attend(self.norm1(x), mask, need_weights)
            x = x + attn  # (B, L, d_model)
            x = x + self._feed_forward(self.norm2(x))  # (B, L, d_model)
        else:  # post-norm, the paper's order
            attn, weights = self._attend(x, mask, need_weights)
            x = self.norm1(x + attn)  # (B, L, d_model)
            x = self.norm2(x + self._feed_forward(x))  # (B, L, d_model)
        return x, weights


class TinyTransformer(nn.Module):
    r"""A small encoder-only Transformer for token-to-token tasks (one prediction per position).

    .. math:: h_0 = E[x] + PE, \qquad h_\ell = \mathrm{Encoder}_\ell(h_{\ell-1}), \qquad
              \mathrm{logits} = h_N W_{out} + b_{out}

    ``E`` is a learned embedding table, ``PE`` the sinusoidal positional encoding
    (:func:`qkv.sinusoidal_positional_encoding`), each encoder layer a
    :class:`TransformerEncoderLayer`; a pre-norm stack ends with one more layer norm.

    Parameters
    ----------
    vocab_size : int
        Number of input token ids ``V``; tokens must lie in ``[0, V)``.
    d_model, num_heads, d_ff, dropout, norm_first, impl
        As in :class:`TransformerEncoderLayer`.
    num_layers : int
        Number of encoder layers.
    max_len : int
        The longest sequence accepted (the positional table is precomputed up to it).
    num_classes : int, optional
        Output classes per position; default ``vocab_size``.

    Examples
    --------
    >>> import torch, qkv
    >>> model = qkv.TinyTransformer(vocab_size=10, d_model=16, num_heads=2, num_layers=2)
    >>> logits, w = model(torch.randint(10, (3, 7)), need_weights=True)
    >>> logits.shape, w.shape
    (torch.Size([3, 7, 10]), torch.Size([2, 3, 2, 7, 7]))
    """

    pe: torch.Tensor  # (max_len, d_model), a buffer: moves with .to() but is not trained

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        num_heads: int,
        num_layers: int,
        d_ff: int | None = None,
        *,
        max_len: int = 512,
        num_classes: int | None = None,
        dropout: float = 0.0,
        norm_first: bool = True,
        impl: Impl = "auto",
    ) -> None:
        super().__init__()
        for name, n in (("vocab_size", vocab_size), ("num_layers", num_layers), ("max_len", max_len)):
            require_int(name, n)
        num_classes = vocab_size if num_classes is None else num_classes
        require_int("num_classes", num_classes)
        self.vocab_size, self.max_len = vocab_size, max_len
        self.embed = nn.Embedding(vocab_size, d_model)  # E
        pe = sinusoidal_positional_encoding(max_len, d_model)  # (max_len, d_model)
        self.register_buffer("pe", pe, persistent=False)
        self.layers = nn.ModuleList(
            TransformerEncoderLayer(d_model, num_heads, d_ff, dropout, norm_first, impl) for _ in range(num_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.head = nn.Linear(d_model, num_classes)  # W_out

    def forward(
        self, tokens: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Map token ids ``tokens`` (B, L) to logits (B, L, num_classes).

        ``mask`` (True = may attend) is passed to every layer. Returns ``(logits, weights)`` like the
        other modules: weights are every layer's attention weights stacked, ``(num_layers, B, H, L, L)``,
        if ``need_weights`` else ``None``.
        """
        tokens = require_tensor("tokens", tokens)
        require(
            tokens.dim() == 2 and not tokens.is_floating_point() and tokens.dtype != torch.bool,
            "tokens",
            "an integer tensor (B, L)",
            f"shape {tuple(tokens.shape)}, dtype {tokens.dtype}",
        )
        L = tokens.shape[1]
        require(0 < L <= self.max_len, "tokens", f"(B, L) with 0 < L <= max_len={self.max_len}", tokens)
        if tokens.numel():
            lo, hi = int(tokens.min()), int(tokens.max())
            require(
                lo >= 0 and hi < self.vocab_size, "tokens", f"ids in [0, {self.vocab_size})", f"ids in [{lo}, {hi}]"
            )
        x = self.embed(tokens) + self.pe[:L]  # (B, L, d_model)
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask=mask, need_weights=need_weights)  # (B, L, d_model)
            all_weights.append(weights)
        logits = self.head(self.final_norm(x))  # (B, L, num_classes)
        return logits, torch.stack(all_weights) if need_weights else None  # weights (num_layers, B, H, L, L)

    @torch.no_grad()
    def accuracy(self, tokens: torch.Tensor, targets: torch.Tensor) -> float:
        """Fraction of positions where the most likely class equals ``targets`` (B, L), in eval mode."""
        targets = require_tensor("targets", targets)
        require(targets.shape == tokens.shape, "targets", f"the shape of tokens {tuple(tokens.shape)}", targets)
        was_training = self.training
        self.eval()  # no dropout while measuring
        logits, _ = self(tokens)  # (B, L, num_classes)
        self.train(was_training)
        return (logits.argmax(-1) == targets).float().mean().item()
