"""multihead: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("MultiHead", "test_MultiHead", "d_model, num_heads")  # the looping version loops in __init__
# CPU seconds one graded call may use in this lab's batch (a cell: 4 times as much): low, so that the explore cell
# that trains longer than a call may take stays short. Every graded call here takes milliseconds.
CALL_TIMEOUT = 2

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "view_permute_prints": Sub(
        {
            "split_heads": """
            def split_heads(x, num_heads):
                B, L, D = x.shape
                out = x.view(B, L, num_heads, D // num_heads).permute(0, 2, 1, 3)
                print("split:", out.shape, out[0, 0, 0])
                return out
            """,
            "merge_heads": """
            def merge_heads(x):
                B, H, L, d_k = x.shape
                return x.permute(0, 2, 1, 3).contiguous().view(B, L, H * d_k)
            """,
        },
        why="view/permute/contiguous, a print of a tensor",
    ),
    "loop_over_heads_chinese": Sub(
        {
            "multihead_attention": """
            def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
                # 每个头单独计算，然后拼接
                d_k = x.shape[-1] // num_heads
                q, k, v = x @ W_q, x @ W_k, x @ W_v
                输出, 权重 = [], []
                for h in range(num_heads):
                    sl = slice(h * d_k, (h + 1) * d_k)
                    w = torch.softmax(q[..., sl] @ k[..., sl].transpose(-2, -1) / math.sqrt(d_k), dim=-1)
                    输出.append(w @ v[..., sl])
                    权重.append(w)
                return torch.cat(输出, dim=-1) @ W_o, torch.stack(权重, dim=1)
            """,
        },
        why="a loop over heads with slices, Chinese names",
    ),
    "setattr_loop_einsum_float64": Sub(
        {
            "MultiHead": """
            class MultiHead(nn.Module):
                def __init__(self, d_model, num_heads):
                    super().__init__()
                    self.num_heads = num_heads
                    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
                        setattr(self, name, nn.Linear(d_model, d_model))

                def forward(self, query, key=None, value=None):
                    key = query if key is None else key
                    value = key if value is None else value
                    q = split_heads(self.q_proj(query), self.num_heads).double()
                    k = split_heads(self.k_proj(key), self.num_heads).double()
                    v = split_heads(self.v_proj(value), self.num_heads).double()
                    s = torch.einsum("bhld,bhsd->bhls", q, k) / q.shape[-1] ** 0.5
                    w = torch.softmax(s, dim=-1)
                    out = merge_heads(torch.einsum("bhls,bhsd->bhld", w, v)).to(query.dtype)
                    return self.out_proj(out), w.to(query.dtype)
            """,
        },
        why="layers made in a setattr loop, einsum in float64",
    ),
    "plot_in_cell": Sub(
        {
            "merge_heads": """
            def merge_heads(x):
                return torch.cat(x.unbind(dim=1), dim=-1)

            plt.plot(merge_heads(torch.randn(1, 2, 3, 4))[0].T)
            plt.show()
            """,
        },
        why="cat of unbound heads, a plot in the cell",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "own_split_merge_methods": Sub(
        {
            "MultiHead": """
            class MultiHead(nn.Module):
                def __init__(self, d_model, num_heads):
                    super().__init__()
                    self.num_heads = num_heads
                    self.q_proj = nn.Linear(d_model, d_model)
                    self.k_proj = nn.Linear(d_model, d_model)
                    self.v_proj = nn.Linear(d_model, d_model)
                    self.out_proj = nn.Linear(d_model, d_model)

                def split_heads(self, x):
                    B, L, d = x.shape
                    return x.view(B, L, self.num_heads, d // self.num_heads).transpose(1, 2)  # (B, H, L, d_k)

                def merge_heads(self, x):
                    B, H, L, d_k = x.shape
                    return x.transpose(1, 2).reshape(B, L, H * d_k)  # (B, L, d_model)

                def forward(self, query, key=None, value=None):
                    key = query if key is None else key
                    value = key if value is None else value
                    q = self.split_heads(self.q_proj(query))
                    k = self.split_heads(self.k_proj(key))
                    v = self.split_heads(self.v_proj(value))
                    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, H, L, S)
                    return self.out_proj(self.merge_heads(w @ v)), w
            """,
        },
        why="a class with its own split_heads and merge_heads methods",
    ),
    "first_attempt_with_torch_layer": Sub(
        add=(
            (
                "multihead_attention",
                """
                # first try: PyTorch's layer (replaced by my own class below)
                class MultiHead(nn.Module):
                    def __init__(self, d_model, num_heads):
                        super().__init__()
                        self.inner = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

                    def forward(self, query, key=None, value=None):
                        key = query if key is None else key
                        value = key if value is None else value
                        return self.inner(query, key, value, average_attn_weights=False)
                """,
            ),
        ),
        why="a first attempt wrapping nn.MultiheadAttention, replaced further down by the student's own class",
    ),
    "earlier_release": Sub(
        release=(
            (
                "test_multihead_attention",
                "torch.manual_seed(3)\n",
                "torch.manual_seed(3)  # the same weights as in the chapter\n",
            ),
        ),
        why="a locked test cell (it builds nn.MultiheadAttention) as an earlier release of the lab had it",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "split_without_transpose": Sub(
        {
            "split_heads": """
        def split_heads(x, num_heads):
            B, L, d_model = x.shape
            return x.reshape(B, num_heads, L, d_model // num_heads)
        """
        },
        lose={"test_split_heads"},
        why="reshape without the transpose",
    ),
    "merge_without_transpose": Sub(
        {
            "merge_heads": """
        def merge_heads(x):
            B, H, L, d_k = x.shape
            return x.reshape(B, L, H * d_k)
        """
        },
        lose={"test_merge_heads"},
        why="reshape without the transpose",
    ),
    "mha_scaled_by_d_model": Sub(
        {
            "multihead_attention": """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]), dim=-1)
            return merge_heads(w @ v) @ W_o, w
        """
        },
        lose={"test_multihead_attention"},
        why="sqrt(d_model) instead of sqrt(d_k)",
    ),
    "mha_forgets_W_o": Sub(
        {
            "multihead_attention": """
        def multihead_attention(x, W_q, W_k, W_v, W_o, num_heads):
            q, k, v = (split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
            w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
            return merge_heads(w @ v), w
        """
        },
        lose={"test_multihead_attention"},
    ),
    "module_ignores_key": Sub(
        {
            "MultiHead": """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, query, key=None, value=None):
                q = split_heads(self.q_proj(query), self.num_heads)
                k = split_heads(self.k_proj(query), self.num_heads)
                v = split_heads(self.v_proj(query), self.num_heads)
                w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(w @ v)), w
        """
        },
        lose={"test_MultiHead"},
        why="always self-attention: cross-attention is wrong",
    ),
    "module_wraps_torch": Sub(
        {
            "MultiHead": """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                return self.mha(query, key, value, average_attn_weights=False)
        """
        },
        lose={"test_MultiHead"},
        why="a forbidden torch.nn.MultiheadAttention inside",
    ),
    # --- found by a trial (issue 19) -------------------------------------------------------------------------
    "values_from_the_key": Sub(
        {
            "MultiHead": """
        class MultiHead(nn.Module):
            def __init__(self, d_model, num_heads):
                super().__init__()
                self.num_heads = num_heads
                self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, query, key=None, value=None):
                key = query if key is None else key
                value = key if value is None else value
                q = split_heads(self.q_proj(query), self.num_heads)
                k = split_heads(self.k_proj(key), self.num_heads)
                v = split_heads(self.v_proj(key), self.num_heads)  # the key, not the value
                weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
                return self.out_proj(merge_heads(weights @ v)), weights
        """
        },
        lose={"test_MultiHead"},
        why="v_proj(key): kept full marks while every check passed one tensor as key and value",
    ),
    "explore_cell_trains_long": Sub(
        add=(
            (
                "MultiHead",
                """
import time

torch.manual_seed(0)
layer = MultiHead(16, 4)
opt = torch.optim.SGD(layer.parameters(), lr=1e-2)
x, target = torch.randn(8, 10, 16), torch.randn(8, 10, 16)
start, steps = time.process_time(), 0
while time.process_time() - start < 1.5 * CALL_TIMEOUT:  # longer than one graded call may take
    out, _ = layer(x)
    loss = ((out - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    steps += 1
print(steps, loss.item())
""".replace("CALL_TIMEOUT", str(CALL_TIMEOUT)),
            ),
        ),
        why="an explore cell that trains the student's layer for longer than one graded call may take",
    ),
}
