"""The positional spec catches the classic bugs (each planted in the solution loses points) and keeps full marks
for correct alternatives (float32 angles, loops, interleaving with stack, the inverse permutation)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

# A forbidden call is judged on the source, and the source of permutation_test reaches the encoding it calls (the lab
# forbids the ready-made encoding in every answer); every other bug costs its own item only.
FORBIDDEN_IN_ENCODING = {"test_sinusoidal_encoding", "test_permutation_test"}
BUGS = {
    "sin and cos swapped": (
        "sinusoidal_encoding",
        """
        def sinusoidal_encoding(num_positions, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * omega
            pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.cos(angles), torch.sin(angles)
            return pe.float()
        """,
        {"test_sinusoidal_encoding"},
    ),
    "frequency exponent i/d instead of 2i/d": (
        "sinusoidal_encoding",
        """
        def sinusoidal_encoding(num_positions, d_model):
            omega = 10000.0 ** (-torch.arange(d_model // 2, dtype=torch.float64) / d_model)
            angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * omega
            pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
            return pe.float()
        """,
        {"test_sinusoidal_encoding"},
    ),
    "sines in the first half, cosines in the second": (
        "sinusoidal_encoding",
        """
        def sinusoidal_encoding(num_positions, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            angles = torch.arange(num_positions, dtype=torch.float64)[:, None] * omega
            return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1).float()
        """,
        {"test_sinusoidal_encoding"},
    ),
    "positions counted from 1": (
        "sinusoidal_encoding",
        """
        def sinusoidal_encoding(num_positions, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            angles = torch.arange(1, num_positions + 1, dtype=torch.float64)[:, None] * omega
            pe = torch.zeros(num_positions, d_model, dtype=torch.float64)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
            return pe.float()
        """,
        {"test_sinusoidal_encoding"},
    ),
    "encoding calls the library": (
        "sinusoidal_encoding",
        """
        def sinusoidal_encoding(num_positions, d_model):
            return qkv.sinusoidal_positional_encoding(num_positions, d_model)
        """,
        FORBIDDEN_IN_ENCODING,
    ),
    "shift matrix transposed (rotates backwards)": (
        "shift_matrix",
        """
        def shift_matrix(k, d_model):
            even = torch.arange(0, d_model, 2)
            odd = even + 1
            b = k * 10000.0 ** (-even.double() / d_model)
            M = torch.zeros(d_model, d_model, dtype=torch.float64)
            M[even, even], M[even, odd] = torch.cos(b), -torch.sin(b)
            M[odd, even], M[odd, odd] = torch.sin(b), torch.cos(b)
            return M.float()
        """,
        {"test_shift_matrix"},
    ),
    "shift matrix with the frequency of column j, not 2i": (
        "shift_matrix",
        """
        def shift_matrix(k, d_model):
            even = torch.arange(0, d_model, 2)
            odd = even + 1
            b = k * 10000.0 ** (-(even // 2).double() / d_model)
            M = torch.zeros(d_model, d_model, dtype=torch.float64)
            M[even, even], M[even, odd] = torch.cos(b), torch.sin(b)
            M[odd, even], M[odd, odd] = -torch.sin(b), torch.cos(b)
            return M.float()
        """,
        {"test_shift_matrix"},
    ),
    "shift matrix calls the library": (
        "shift_matrix",
        """
        def shift_matrix(k, d_model):
            return qkv.sinusoidal_shift_matrix(k, d_model)
        """,
        {"test_shift_matrix"},
    ),
    "offset dot summed over all columns' frequencies": (
        "offset_dot",
        """
        def offset_dot(k, d_model):
            omega = 10000.0 ** (-torch.arange(d_model, dtype=torch.float64) / d_model)
            return torch.cos(k * omega).sum().item()
        """,
        {"test_offset_dot"},
    ),
    "offset dot with sines": (
        "offset_dot",
        """
        def offset_dot(k, d_model):
            omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
            return torch.sin(k * omega).sum().item()
        """,
        {"test_offset_dot"},
    ),
    "positions added before shuffling": (
        "permutation_test",
        """
        def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
            L, d = x.shape
            h = x + sinusoidal_encoding(L, d) if use_positions else x
            f = lambda inp: qkv.scaled_dot_product_attention(inp @ W_q, inp @ W_k, inp @ W_v)
            return (f(h[perm]) - f(h)[perm]).abs().max().item()
        """,
        {"test_permutation_test"},
    ),
    "compares with the unpermuted output": (
        "permutation_test",
        """
        def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
            L, d = x.shape
            def f(inp):
                h = inp + sinusoidal_encoding(L, d) if use_positions else inp
                return qkv.scaled_dot_product_attention(h @ W_q, h @ W_k, h @ W_v)
            return (f(x[perm]) - f(x)).abs().max().item()
        """,
        {"test_permutation_test"},
    ),
    "mean instead of max": (
        "permutation_test",
        """
        def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
            L, d = x.shape
            def f(inp):
                h = inp + sinusoidal_encoding(L, d) if use_positions else inp
                return qkv.scaled_dot_product_attention(h @ W_q, h @ W_k, h @ W_v)
            return (f(x[perm]) - f(x)[perm]).abs().mean().item()
        """,
        {"test_permutation_test"},
    ),
}

ALTERNATIVES = {
    "float32 angles, stack to interleave": {
        "sinusoidal_encoding": """
            def sinusoidal_encoding(num_positions, d_model):
                i = torch.arange(d_model // 2)
                angles = torch.arange(num_positions)[:, None] / 10000 ** (2 * i / d_model)
                return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(num_positions, d_model)
            """,
        "offset_dot": """
            def offset_dot(k, d_model):
                return float(sum(math.cos(k / 10000 ** (2 * i / d_model)) for i in range(d_model // 2)))
            """,
    },
    "loops, own attention, the inverse permutation": {
        "shift_matrix": """
            def shift_matrix(k, d_model):
                M = torch.zeros(d_model, d_model)
                for i in range(d_model // 2):
                    b = k * math.exp(-math.log(10000.0) * 2 * i / d_model)
                    M[2 * i, 2 * i], M[2 * i, 2 * i + 1] = math.cos(b), math.sin(b)
                    M[2 * i + 1, 2 * i], M[2 * i + 1, 2 * i + 1] = -math.sin(b), math.cos(b)
                return M
            """,
        "permutation_test": """
            def permutation_test(x, perm, W_q, W_k, W_v, use_positions):
                x = x.double()
                pe = sinusoidal_encoding(*x.shape).double() if use_positions else 0.0
                def f(inp):
                    h = inp + pe
                    q, k, v = h @ W_q.double(), h @ W_k.double(), h @ W_v.double()
                    return torch.softmax(q @ k.T / q.shape[1] ** 0.5, dim=-1) @ v
                inverse = torch.argsort(perm)
                return float((f(x[perm])[inverse] - f(x)).abs().max())
            """,
    },
}


def test_positional_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("positional", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["encoding calls the library"].items["test_sinusoidal_encoding"].lines))
    assert "sinusoidal_positional_encoding" in line
