"""positional: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("permutation_test", "test_permutation_test", "x, perm, W_q, W_k, W_v, use_positions")

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "loops_and_prints": Sub(
        {
            "sinusoidal_encoding": """
            def sinusoidal_encoding(num_positions, d_model):
                pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
                for p in range(num_positions):
                    for i in range(0, d_model, 2):
                        w = 10000 ** (-i / d_model)
                        pe[p, i] = math.sin(p * w)
                        pe[p, i + 1] = math.cos(p * w)
                print(pe[:2])   # first two rows
                return pe.float()
            """,
        },
        why="double loop with math.sin/cos, a print",
    ),
    "stack_chinese_plot": Sub(
        {
            "sinusoidal_encoding": """
            def sinusoidal_encoding(num_positions, d_model):
                # 频率 ω_i = 10000^(-2i/d)
                频率 = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
                角度 = torch.arange(num_positions, dtype=torch.float64)[:, None] * 频率
                return torch.stack([角度.sin(), 角度.cos()], dim=-1).reshape(num_positions, d_model).float()

            plt.imshow(sinusoidal_encoding(50, 16).T, aspect="auto")
            plt.show()
            """,
            "offset_dot": """
            def offset_dot(k, d_model):
                return float(sum(math.cos(k * 10000 ** (-i / d_model)) for i in range(0, d_model, 2)))
            """,
        },
        why="interleave with stack, exp-log frequencies, a plot, a plain-Python sum",
    ),
    "block_diag_helper": Sub(
        {
            "shift_matrix": """
            def _rot(b):
                return torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]], dtype=torch.float64)

            def shift_matrix(k, d_model):
                blocks = [_rot(k * 10000 ** (-i / d_model)) for i in range(0, d_model, 2)]
                return torch.block_diag(*blocks).to(torch.float32)
            """,
            "permutation_test": """
            def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
                L, d = x.shape
                pe = sinusoidal_encoding(L, d) if use_positions else 0.0
                def layer(h):
                    h = h + pe
                    q, k, v = h @ W_q, h @ W_k, h @ W_v
                    w = torch.softmax(q @ k.T / math.sqrt(q.shape[1]), dim=1)
                    return w @ v
                gap = (layer(x[perm]) - layer(x)[perm]).abs().max()
                print("gap", gap)
                return gap.item()
            """,
        },
        why="block_diag of 2x2 helpers, own attention, a print",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "helper_with_keyword": Sub(
        {
            "sinusoidal_encoding": """
            def sinusoidal_encoding(num_positions, d_model, *, base=10000.0, dtype=torch.float32):
                omega = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
                angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * omega  # (P, d/2)
                pe = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1)  # (P, d/2, 2)
                return pe.reshape(num_positions, d_model).to(dtype)
            """,
            "permutation_test": """
            def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
                L, d_model = x.shape
                pe = sinusoidal_encoding(L, d_model, dtype=x.dtype) if use_positions else torch.zeros_like(x)

                def f(inp):
                    h = inp + pe
                    return qkv.scaled_dot_product_attention(h @ W_q, h @ W_k, h @ W_v)  # (L, d_v)

                return (f(x[perm]) - f(x)[perm]).abs().max().item()
            """,
        },
        why="its own helper takes keywords: sinusoidal_encoding(L, d, dtype=x.dtype)",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "sin_cos_swapped": Sub(
        {
            "sinusoidal_encoding": """
        def sinusoidal_encoding(num_positions, d_model):
            w = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            a = torch.arange(num_positions, dtype=torch.float64)[:, None] * w
            pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.cos(a), torch.sin(a)
            return pe.float()
        """
        },
        lose={"test_sinusoidal_encoding"},
    ),
    "encoding_float64": Sub(
        {
            "sinusoidal_encoding": """
        def sinusoidal_encoding(num_positions, d_model):
            w = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            a = torch.arange(num_positions, dtype=torch.float64)[:, None] * w
            pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(a), torch.cos(a)
            return pe
        """
        },
        lose={"test_sinusoidal_encoding"},
        why="float64 where the lab asks for float32",
    ),
    "shift_transposed": Sub(
        {
            "shift_matrix": """
        def shift_matrix(k, d_model):
            e = torch.arange(0, d_model, 2)
            b = k * 10000.0 ** (-e.double() / d_model)
            M = torch.zeros(d_model, d_model, dtype=torch.float64)
            M[e, e], M[e, e + 1] = torch.cos(b), -torch.sin(b)
            M[e + 1, e], M[e + 1, e + 1] = torch.sin(b), torch.cos(b)
            return M.float()
        """
        },
        lose={"test_shift_matrix"},
        why="M_k transposed (rotates the wrong way)",
    ),
    "offset_dot_tensor": Sub(
        {
            "offset_dot": """
        def offset_dot(k, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            return torch.cos(k * omega).sum()
        """
        },
        lose={"test_offset_dot"},
        why="a 0-d tensor where the lab asks for a Python float",
    ),
    "offset_dot_sin": Sub(
        {
            "offset_dot": """
        def offset_dot(k, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            return (torch.sin(k * omega) + torch.cos(k * omega)).sum().item()
        """
        },
        lose={"test_offset_dot"},
    ),
    "positions_before_shuffle": Sub(
        {
            "permutation_test": """
        def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
            L, d_model = x.shape
            h = x + sinusoidal_encoding(L, d_model) if use_positions else x
            f = lambda inp: qkv.scaled_dot_product_attention(inp @ W_q, inp @ W_k, inp @ W_v)
            return (f(h[perm]) - f(h)[perm]).abs().max().item()
        """
        },
        lose={"test_permutation_test"},
        why="positions added before shuffling: the gap stays 0",
    ),
}
