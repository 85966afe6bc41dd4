"""masks: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("future_leak", "test_future_leak", "x, x_new, t, mask")
ATT = "test_masked_attention"

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "tril_loops_prints": Sub(
        {
            "causal_mask": """
            def causal_mask(L):
                m = torch.ones(L, L, dtype=torch.bool).tril()
                print(m)   # 看一下掩码
                return m
            """,
            "local_mask": """
            def local_mask(L, window):
                m = torch.zeros(L, L, dtype=torch.bool)
                for i in range(L):
                    for j in range(L):
                        if abs(i - j) <= window:
                            m[i, j] = True
                return m
            """,
        },
        why="tril, loops, a print of the mask",
    ),
    "float64_where_softmax": Sub(
        {
            "masked_attention": """
            def masked_attention(q, k, v, mask=None):
                s = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
                if mask is not None:
                    s = s.masked_fill(~mask, float("-inf"))
                row_max = s.amax(dim=-1, keepdim=True)
                row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
                e = torch.exp(s - row_max)
                z = e.sum(dim=-1, keepdim=True)
                w = torch.where(z > 0, e / z.clamp_min(1e-300), torch.zeros_like(e))
                print("weights", w.shape)
                return (w @ v.double()).to(q.dtype), w.to(q.dtype)
            """,
        },
        why="float64 inside, isinf test for empty rows, a print",
    ),
    "graph_helpers_plot_chinese": Sub(
        {
            "graph_mask": """
            def 对角(n):
                return torch.eye(n, dtype=torch.bool)

            def graph_mask(adjacency, self_loops=True):
                # 有边就可以注意
                m = adjacency.bool()
                return m | 对角(m.shape[0]) if self_loops else m

            plt.imshow(graph_mask(torch.tensor([[0, 1], [0, 0]])).int())
            plt.show()
            """,
            "future_leak": """
            def future_leak(x, x_new, t, mask):
                changed = x.clone()
                changed[t + 1:] = x_new[t + 1:]
                a = masked_attention(x, x, x, mask)[0][: t + 1]
                b = masked_attention(changed, changed, changed, mask)[0][: t + 1]
                return float((a - b).abs().max())
            """,
        },
        why="a helper with a Chinese name, .bool(), a plot, clone and float()",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "causal_inverted": Sub(
        {
            "causal_mask": """
        def causal_mask(L):
            return torch.ones(L, L, dtype=torch.bool).triu(1)
        """
        },
        lose={"test_causal_mask"},
    ),
    "causal_float_mask": Sub(
        {
            "causal_mask": """
        def causal_mask(L):
            return torch.ones(L, L).tril()
        """
        },
        lose={"test_causal_mask"},
        why="0/1 floats instead of booleans",
    ),
    "local_window_off_by_one": Sub(
        {
            "local_mask": """
        def local_mask(L, window):
            pos = torch.arange(L)
            return (pos[:, None] - pos[None, :]).abs() < window
        """
        },
        lose={"test_local_mask"},
    ),
    "graph_transposed": Sub(
        {
            "graph_mask": """
        def graph_mask(adjacency, self_loops=True):
            m = (adjacency != 0).T
            return m | torch.eye(m.shape[0], dtype=torch.bool) if self_loops else m
        """
        },
        lose={"test_graph_mask"},
    ),
    "attention_minus_1e9": Sub(
        {
            "masked_attention": """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask, -1e9)
            e = torch.exp(s - s.amax(dim=-1, keepdim=True))
            w = e / e.sum(dim=-1, keepdim=True)
            return w @ v, w
        """
        },
        lose={ATT},
        why="-1e9: a fully masked row averages the forbidden keys",
    ),
    "attention_no_max_subtraction": Sub(
        {
            "masked_attention": """
        def masked_attention(q, k, v, mask=None):
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is None:
                mask = torch.ones_like(s, dtype=torch.bool)
            e = torch.exp(s).masked_fill(~mask, 0.0)
            total = e.sum(dim=-1, keepdim=True)
            w = torch.where(total > 0, e / total, torch.zeros_like(e))
            return w @ v, w
        """
        },
        lose={ATT},
        why="no max-subtraction: NaN once scores pass 88",
    ),
    "attention_no_max_subtraction_float64": Sub(
        {
            "masked_attention": """
        def masked_attention(q, k, v, mask=None):
            s = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is None:
                mask = torch.ones_like(s, dtype=torch.bool)
            e = torch.exp(s).masked_fill(~mask, 0.0)
            total = e.sum(dim=-1, keepdim=True)
            w = torch.where(total > 0, e / total, torch.zeros_like(e))
            return (w @ v.double()).float(), w.float()
        """
        },
        lose={ATT},
        why="no max-subtraction in float64: NaN once scores pass 709",
    ),
    "leak_returns_tensor": Sub(
        {
            "future_leak": """
        def future_leak(x, x_new, t, mask):
            x_changed = torch.cat([x[: t + 1], x_new[t + 1 :]])
            before, _ = masked_attention(x, x, x, mask)
            after, _ = masked_attention(x_changed, x_changed, x_changed, mask)
            return (after[: t + 1] - before[: t + 1]).abs().max()
        """
        },
        lose={"test_future_leak"},
        why="a 0-d tensor where the lab asks for a Python float",
    ),
    "leak_excludes_t": Sub(
        {
            "future_leak": """
        def future_leak(x, x_new, t, mask):
            x_changed = torch.cat([x[: t + 1], x_new[t + 1 :]])
            before, _ = masked_attention(x, x, x, mask)
            after, _ = masked_attention(x_changed, x_changed, x_changed, mask)
            return (after[:t] - before[:t]).abs().max().item()
        """
        },
        lose={"test_future_leak"},
        why="compares positions 0..t-1 only",
    ),
}
