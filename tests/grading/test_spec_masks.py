"""The masks spec catches the classic bugs (each planted in the solution loses points) and keeps full
marks for correct alternatives (loops, einsum, a hand-written softmax with the NaN rows cleaned, float64 inside)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

# A forbidden call is judged on the source, and the source of future_leak reaches the masked_attention it calls (the lab
# forbids the ready-made attention in every answer); every other bug costs its own item only.
FORBIDDEN_IN_ATTENTION = {"test_masked_attention", "test_future_leak"}
BUGS = {
    "causal mask inverted (the future, not the past)": (
        "causal_mask",
        """
        def causal_mask(L):
            return torch.ones(L, L, dtype=torch.bool).triu()
        """,
        {"test_causal_mask"},
    ),
    "causal mask without the diagonal": (
        "causal_mask",
        """
        def causal_mask(L):
            i = torch.arange(L)
            return i[:, None] > i[None, :]
        """,
        {"test_causal_mask"},
    ),
    "causal mask as 0/1 floats": (
        "causal_mask",
        """
        def causal_mask(L):
            return torch.ones(L, L).tril()
        """,
        {"test_causal_mask"},
    ),
    "causal mask from the library": (
        "causal_mask",
        """
        def causal_mask(L):
            return qkv.causal_mask(L)
        """,
        {"test_causal_mask"},
    ),
    "local mask with < instead of <=": (
        "local_mask",
        """
        def local_mask(L, window):
            i = torch.arange(L)
            return (i[:, None] - i[None, :]).abs() < window
        """,
        {"test_local_mask"},
    ),
    "local mask one-sided": (
        "local_mask",
        """
        def local_mask(L, window):
            i = torch.arange(L)
            d = i[:, None] - i[None, :]
            return (d >= 0) & (d <= window)
        """,
        {"test_local_mask"},
    ),
    "graph mask transposed": (
        "graph_mask",
        """
        def graph_mask(adjacency, self_loops=True):
            mask = adjacency.T != 0
            return mask | torch.eye(adjacency.shape[0], dtype=torch.bool) if self_loops else mask
        """,
        {"test_graph_mask"},
    ),
    "graph mask ignores self_loops=False": (
        "graph_mask",
        """
        def graph_mask(adjacency, self_loops=True):
            return (adjacency != 0) | torch.eye(adjacency.shape[0], dtype=torch.bool)
        """,
        {"test_graph_mask"},
    ),
    "graph mask counts only positive weights as edges": (
        "graph_mask",
        """
        def graph_mask(adjacency, self_loops=True):
            mask = adjacency > 0
            return mask | torch.eye(adjacency.shape[0], dtype=torch.bool) if self_loops else mask
        """,
        {"test_graph_mask"},
    ),
    "attention with the mask inverted": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = torch.nan_to_num(e / e.sum(-1, keepdim=True), nan=0.0)
            return w @ v, w
        """,
        {"test_masked_attention"},
    ),
    "attention with -1e9 instead of -inf": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, -1e9)
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = e / e.sum(-1, keepdim=True)
            return w @ v, w
        """,
        {"test_masked_attention"},
    ),
    "attention with -inf and NaN on fully masked rows": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = e / e.sum(-1, keepdim=True)
            return w @ v, w
        """,
        {"test_masked_attention"},
    ),
    "attention zeroes the output of a fully masked row but leaves NaN weights": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = e / e.sum(-1, keepdim=True)
            return torch.nan_to_num(w @ v, nan=0.0), w
        """,
        {"test_masked_attention"},
    ),
    "attention masks the weights after the softmax (not renormalised)": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = e / e.sum(-1, keepdim=True)
            if mask is not None:
                w = w * mask
            return w @ v, w
        """,
        {"test_masked_attention"},
    ),
    "attention not scaled": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            e = torch.exp(s - s.amax(-1, keepdim=True))
            w = torch.nan_to_num(e / e.sum(-1, keepdim=True), nan=0.0)
            return w @ v, w
        """,
        {"test_masked_attention"},
    ),
    "attention through qkv.softmax": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = qkv.softmax(s, dim=-1)
            return w @ v, w
        """,
        FORBIDDEN_IN_ATTENTION,
    ),
    "attention through torch.softmax": (
        "masked_attention",
        """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            w = torch.softmax(s, dim=-1).nan_to_num(0.0)
            return w @ v, w
        """,
        FORBIDDEN_IN_ATTENTION,
    ),
    "attention through torch's fused kernel": (
        "masked_attention",
        """
        import torch.nn.functional as F
        def masked_attention(q, k, v, mask=None):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return out, out
        """,
        FORBIDDEN_IN_ATTENTION,
    ),
    "leak compares positions 0..t-1 only": (
        "future_leak",
        """
        def future_leak(x, x_new, t, mask):
            changed = torch.cat([x[: t + 1], x_new[t + 1 :]])
            a, _ = masked_attention(x, x, x, mask)
            b, _ = masked_attention(changed, changed, changed, mask)
            return (a[:t] - b[:t]).abs().max().item() if t > 0 else 0.0
        """,
        {"test_future_leak"},
    ),
    "leak changes position t too": (
        "future_leak",
        """
        def future_leak(x, x_new, t, mask):
            changed = torch.cat([x[:t], x_new[t:]])
            a, _ = masked_attention(x, x, x, mask)
            b, _ = masked_attention(changed, changed, changed, mask)
            return (a[: t + 1] - b[: t + 1]).abs().max().item()
        """,
        {"test_future_leak"},
    ),
    "leak measured over every position": (
        "future_leak",
        """
        def future_leak(x, x_new, t, mask):
            changed = torch.cat([x[: t + 1], x_new[t + 1 :]])
            a, _ = masked_attention(x, x, x, mask)
            b, _ = masked_attention(changed, changed, changed, mask)
            return (a - b).abs().max().item()
        """,
        {"test_future_leak"},
    ),
}

ALTERNATIVES = {
    "loops and comparisons": {
        "causal_mask": """
            def causal_mask(L):
                m = torch.zeros(L, L, dtype=torch.bool)
                for i in range(L):
                    for j in range(i + 1):
                        m[i, j] = True
                return m
            """,
        "local_mask": """
            def local_mask(L, window):
                return torch.tensor([[abs(i - j) <= window for j in range(L)] for i in range(L)])
            """,
        "graph_mask": """
            def graph_mask(adjacency, self_loops=True):
                mask = adjacency.bool()
                if self_loops:
                    mask = mask.clone()
                    mask.fill_diagonal_(True)
                return mask
            """,
    },
    "own softmax with the NaN rows cleaned by nan_to_num, einsum": {
        "masked_attention": """
            def masked_attention(q, k, v, mask=None):
                s = torch.einsum("...ld,...sd->...ls", q, k) / q.shape[-1] ** 0.5
                if mask is not None:
                    s = torch.where(mask, s, torch.tensor(float("-inf")))
                e = torch.exp(s - s.amax(-1, keepdim=True))
                w = torch.nan_to_num(e / e.sum(-1, keepdim=True), nan=0.0)
                return torch.einsum("...ls,...sd->...ld", w, v), w
            """,
    },
    "float64 inside, exp of -inf by hand": {
        "masked_attention": """
            def masked_attention(q, k, v, mask=None):
                s = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
                if mask is None:
                    mask = torch.ones_like(s, dtype=torch.bool)
                s = s.masked_fill(~mask, float("-inf"))
                m = s.amax(-1, keepdim=True).clamp(min=-1e300)
                e = torch.exp(s - m)
                total = e.sum(-1, keepdim=True)
                w = e / total.clamp(min=1e-300)
                return (w @ v.double()).float(), w.float()
            """,
        "future_leak": """
            def future_leak(x, x_new, t, mask):
                changed = x.clone()
                changed[t + 1 :] = x_new[t + 1 :]
                a = masked_attention(x, x, x, mask)[0][: t + 1]
                b = masked_attention(changed, changed, changed, mask)[0][: t + 1]
                return float(torch.max(torch.abs(a - b)))
            """,
    },
}


def test_masks_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("masks", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["attention through qkv.softmax"].items["test_masked_attention"].lines))
    assert "qkv.softmax" in line
