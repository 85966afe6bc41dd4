"""The multihead spec catches the classic bugs (each planted in the solution loses points) and keeps full marks
for correct alternatives (view/permute, einsum, a loop over heads, float64 inside)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

# A forbidden call is judged on the source, and the source of the later exercises reaches the split_heads it calls (the lab
# forbids the ready-made parts in every answer); every other bug costs its own item only.
FORBIDDEN_IN_SPLIT = {"test_split_heads", "test_multihead_attention", "test_MultiHead"}
BUGS = {
    "split: reshape without the transpose": (
        "split_heads",
        """
        def split_heads(x, num_heads):
            B, L, d_model = x.shape
            return x.reshape(B, num_heads, L, d_model // num_heads)
        """,
        {"test_split_heads"},
    ),
    "split: heads interleaved (feature c to head c % H)": (
        "split_heads",
        """
        def split_heads(x, num_heads):
            B, L, d_model = x.shape
            return x.reshape(B, L, d_model // num_heads, num_heads).permute(0, 3, 1, 2)
        """,
        {"test_split_heads"},
    ),
    "split calls the library": (
        "split_heads",
        """
        def split_heads(x, num_heads):
            return qkv.split_heads(x, num_heads)
        """,
        FORBIDDEN_IN_SPLIT,
    ),
    "merge: reshape without the transpose": (
        "merge_heads",
        """
        def merge_heads(x):
            B, H, L, d_k = x.shape
            return x.reshape(B, L, H * d_k)
        """,
        {"test_merge_heads"},
    ),
    "merge: transpose of the wrong axes": (
        "merge_heads",
        """
        def merge_heads(x):
            B, H, L, d_k = x.shape
            return x.transpose(2, 3).reshape(B, L, H * d_k)
        """,
        {"test_merge_heads"},
    ),
    "attention scaled by sqrt(d_model) instead of sqrt(d_k)": (
        "multihead_attention",
        """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]), dim=-1)
            return merge_heads(weights @ v) @ W_o, weights
        """,
        {"test_multihead_attention"},
    ),
    "attention softmax over the queries": (
        "multihead_attention",
        """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2)
            return merge_heads(weights @ v) @ W_o, weights
        """,
        {"test_multihead_attention"},
    ),
    "attention without W_o": (
        "multihead_attention",
        """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(weights @ v), weights
        """,
        {"test_multihead_attention"},
    ),
    "attention with nn.Linear's convention (x @ W.T)": (
        "multihead_attention",
        """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W.T, num_heads) for W in (W_q, W_k, W_v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(weights @ v) @ W_o.T, weights
        """,
        {"test_multihead_attention"},
    ),
    "attention through F.multi_head_attention_forward": (
        "multihead_attention",
        """
        import torch.nn.functional as F
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            xt = x.transpose(0, 1)
            out, w = F.multi_head_attention_forward(xt, xt, xt, x.shape[-1], num_heads,
                torch.cat([W_q.T, W_k.T, W_v.T]), None, None, None, False, 0.0, W_o.T, None,
                need_weights=True, average_attn_weights=False)
            return out.transpose(0, 1), w
        """,
        {"test_multihead_attention"},
    ),
    "module without biases": (
        "MultiHead",
        """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model, bias=False), nn.Linear(d_model, d_model, bias=False)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model, bias=False), nn.Linear(d_model, d_model, bias=False)
            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                q, k, v = split_heads(self.q_proj(query), self.num_heads), split_heads(self.k_proj(key), self.num_heads), split_heads(self.v_proj(value), self.num_heads)
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(w @ v)), w
        """,
        {"test_MultiHead"},
    ),
    "module: keys and values always from the query": (
        "MultiHead",
        """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
            def forward(self, query, key=None, value=None):
                q, k, v = split_heads(self.q_proj(query), self.num_heads), split_heads(self.k_proj(query), self.num_heads), split_heads(self.v_proj(query), self.num_heads)
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(w @ v)), w
        """,
        {"test_MultiHead"},
    ),
    # Found by a trial (issue 19): every cross-attention check passed one tensor as key and value.
    "module: values projected from the key": (
        "MultiHead",
        """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                q, k, v = split_heads(self.q_proj(query), self.num_heads), split_heads(self.k_proj(key), self.num_heads), split_heads(self.v_proj(key), self.num_heads)
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(w @ v)), w
        """,
        {"test_MultiHead"},
    ),
    "module: weights averaged over heads": (
        "MultiHead",
        """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                q, k, v = split_heads(self.q_proj(query), self.num_heads), split_heads(self.k_proj(key), self.num_heads), split_heads(self.v_proj(value), self.num_heads)
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(w @ v)), w.mean(dim=1)
        """,
        {"test_MultiHead"},
    ),
    "module wraps torch.nn.MultiheadAttention": (
        "MultiHead",
        """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads, self.d_model = num_heads, d_model
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                layer = nn.MultiheadAttention(self.d_model, self.num_heads, batch_first=True)
                with torch.no_grad():
                    layer.in_proj_weight.copy_(torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight]))
                    layer.in_proj_bias.copy_(torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]))
                    layer.out_proj.weight.copy_(self.out_proj.weight)
                    layer.out_proj.bias.copy_(self.out_proj.bias)
                return layer(query, key, value, average_attn_weights=False)
        """,
        {"test_MultiHead"},
    ),
}

ALTERNATIVES = {
    "view/permute, einsum": {
        "split_heads": """
            def split_heads(x, num_heads):
                B, L, d = x.shape
                return x.view(B, L, num_heads, d // num_heads).permute(0, 2, 1, 3)
            """,
        "merge_heads": """
            def merge_heads(x):
                return torch.cat(x.unbind(dim=1), dim=-1)
            """,
        "multihead_attention": """
            def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
                q, k, v = (split_heads(torch.einsum('blm,md->bld', x, W), num_heads) for W in (W_q, W_k, W_v))
                s = torch.einsum('bhld,bhsd->bhls', q, k) * q.shape[-1] ** -0.5
                w = torch.softmax(s, dim=-1)
                return torch.einsum('bld,de->ble', merge_heads(torch.einsum('bhls,bhsd->bhld', w, v)), W_o), w
            """,
    },
    "a loop over heads in float64": {
        "multihead_attention": """
            def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
                x = x.double()
                d_k = x.shape[-1] // num_heads
                outs, ws = [], []
                for h in range(num_heads):
                    cols = slice(h * d_k, (h + 1) * d_k)
                    q, k, v = x @ W_q.double()[:, cols], x @ W_k.double()[:, cols], x @ W_v.double()[:, cols]
                    w = torch.softmax(q @ k.transpose(1, 2) / d_k ** 0.5, dim=-1)
                    outs.append(w @ v)
                    ws.append(w)
                return (torch.cat(outs, dim=-1) @ W_o.double()).float(), torch.stack(ws, dim=1).float()
            """,
        "MultiHead": """
            class MultiHead(nn.Module):
                def __init__(self, d_model, num_heads):
                    super().__init__()
                    self.h = num_heads
                    self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                    self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                def forward(self, query, key=None, value=None):
                    if key is None:
                        key = value = query
                    q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
                    d_k = q.shape[-1] // self.h
                    outs, ws = [], []
                    for h in range(self.h):
                        c = slice(h * d_k, (h + 1) * d_k)
                        w = torch.softmax(q[..., c] @ k[..., c].transpose(1, 2) / math.sqrt(d_k), dim=-1)
                        outs.append(w @ v[..., c])
                        ws.append(w)
                    return self.out_proj(torch.cat(outs, dim=-1)), torch.stack(ws, dim=1)
            """,
    },
}


def test_multihead_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("multihead", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["module wraps torch.nn.MultiheadAttention"].items["test_MultiHead"].lines))
    assert "MultiheadAttention" in line
