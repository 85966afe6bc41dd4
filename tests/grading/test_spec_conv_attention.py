"""The conv_attention spec catches the classic bugs (each planted in the solution loses points) and keeps full
marks for correct alternatives (torch.diag, einsum over stacked heads, explicit pixel loops, float64 inside)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

BUGS = {
    "scores with i - j instead of j - i": (
        "relative_scores",
        """
        def relative_scores(L, shift, alpha):
            pos = torch.arange(L, dtype=torch.float32)
            return -alpha * ((pos[:, None] - pos[None, :]) - shift) ** 2
        """,
        {"test_relative_scores"},
    ),
    "scores with |.| instead of the square": (
        "relative_scores",
        """
        def relative_scores(L, shift, alpha):
            pos = torch.arange(L, dtype=torch.float32)
            return -alpha * ((pos[None, :] - pos[:, None]) - shift).abs()
        """,
        {"test_relative_scores"},
    ),
    "shift by torch.roll (wraps around)": (
        "shift_weights",
        """
        def shift_weights(L, shift):
            return torch.eye(L).roll(shift, dims=1)
        """,
        {"test_shift_weights"},
    ),
    "shift pattern transposed": (
        "shift_weights",
        """
        def shift_weights(L, shift):
            pos = torch.arange(L)
            return ((pos[:, None] - pos[None, :]) == shift).float()
        """,
        {"test_shift_weights"},
    ),
    "conv1d with the kernel flipped (a true convolution)": (
        "attention_conv1d",
        """
        def attention_conv1d(x, weight):
            C_out, C_in, K = weight.shape
            out = 0
            for t in range(K):
                out = out + (shift_weights(x.shape[1], K // 2 - t) @ x.T) @ weight[:, :, t].T
            return out.T
        """,
        {"test_attention_conv1d"},
    ),
    "conv1d with the tap matrix not transposed": (
        "attention_conv1d",
        """
        def attention_conv1d(x, weight):
            C_out, C_in, K = weight.shape
            out = 0
            for t in range(K):
                out = out + (shift_weights(x.shape[1], t - K // 2) @ x.T) @ weight[:, :, t].reshape(C_in, C_out)
            return out.T
        """,
        {"test_attention_conv1d"},
    ),
    "conv1d wrapping around with roll": (
        "attention_conv1d",
        """
        def attention_conv1d(x, weight):
            C_out, C_in, K = weight.shape
            out = 0
            for t in range(K):
                out = out + x.T.roll(-(t - K // 2), dims=0) @ weight[:, :, t].T
            return out.T
        """,
        {"test_attention_conv1d"},
    ),
    "conv1d calls F.conv1d": (
        "attention_conv1d",
        """
        import torch.nn.functional as F
        def attention_conv1d(x, weight):
            return F.conv1d(x[None], weight, padding=weight.shape[-1] // 2)[0]
        """,
        {"test_attention_conv1d"},
    ),
    "conv2d shifting the flattened sequence (wraps across rows)": (
        "attention_conv2d",
        """
        def attention_conv2d(img, weight):
            C_out, C_in, K, _ = weight.shape
            _, H, W = img.shape
            tokens = img.reshape(C_in, H * W).T
            out = 0
            for a in range(K):
                for b in range(K):
                    A = shift_weights(H * W, (a - K // 2) * W + (b - K // 2))
                    out = out + A @ tokens @ weight[:, :, a, b].T
            return out.T.reshape(C_out, H, W)
        """,
        {"test_attention_conv2d"},
    ),
    "conv2d with rows and columns swapped": (
        "attention_conv2d",
        """
        def attention_conv2d(img, weight):
            C_out, C_in, K, _ = weight.shape
            _, H, W = img.shape
            tokens = img.reshape(C_in, H * W).T
            out = 0
            for a in range(K):
                for b in range(K):
                    A = torch.kron(shift_weights(H, b - K // 2), shift_weights(W, a - K // 2))
                    out = out + A @ tokens @ weight[:, :, a, b].T
            return out.T.reshape(C_out, H, W)
        """,
        {"test_attention_conv2d"},
    ),
    "conv2d through unfold": (
        "attention_conv2d",
        """
        import torch.nn.functional as F
        def attention_conv2d(img, weight):
            C_out, C_in, K, _ = weight.shape
            _, H, W = img.shape
            cols = F.unfold(img[None], K, padding=K // 2)[0]
            return (weight.reshape(C_out, -1) @ cols).reshape(C_out, H, W)
        """,
        {"test_attention_conv2d"},
    ),
    "receptive field multiplied in the wrong order": (
        "receptive_field",
        """
        def receptive_field(patterns):
            reach = torch.eye(patterns.shape[-1], dtype=torch.bool)
            for P in patterns:
                reach = (reach.float() @ (P > 0).float()) > 0
            return reach.sum(dim=-1)
        """,
        {"test_receptive_field"},
    ),
    "receptive field counted over columns": (
        "receptive_field",
        """
        def receptive_field(patterns):
            reach = torch.eye(patterns.shape[-1], dtype=torch.bool)
            for P in patterns:
                reach = ((P > 0).float() @ reach.float()) > 0
            return reach.sum(dim=0)
        """,
        {"test_receptive_field"},
    ),
    "receptive field of the last layer only": (
        "receptive_field",
        """
        def receptive_field(patterns):
            return (patterns[-1] > 0).sum(dim=-1)
        """,
        {"test_receptive_field"},
    ),
}

ALTERNATIVES = {
    "torch.diag and einsum over stacked heads": {
        "shift_weights": """
            def shift_weights(L, shift):
                if abs(shift) >= L:
                    return torch.zeros(L, L)
                return torch.diag(torch.ones(L - abs(shift)), shift)
            """,
        "attention_conv1d": """
            def attention_conv1d(x, weight):
                C_out, C_in, K = weight.shape
                A = torch.stack([shift_weights(x.shape[1], t - K // 2) for t in range(K)])  # (K, L, L)
                heads = torch.einsum("tls,cs->tlc", A, x)  # (K, L, C_in)
                return torch.einsum("tlc,oct->ol", heads, weight)
            """,
    },
    "explicit pixel loops in float64": {
        "attention_conv2d": """
            def attention_conv2d(img, weight):
                C_out, C_in, K, _ = weight.shape
                _, H, W = img.shape
                N = H * W
                tokens = img.double().reshape(C_in, N).T
                out = torch.zeros(N, C_out, dtype=torch.float64)
                for a in range(K):
                    for b in range(K):
                        A = torch.zeros(N, N, dtype=torch.float64)
                        for r in range(H):
                            for c in range(W):
                                rr, cc = r + a - K // 2, c + b - K // 2
                                if 0 <= rr < H and 0 <= cc < W:
                                    A[r * W + c, rr * W + cc] = 1.0
                        out += A @ tokens @ weight[:, :, a, b].double().T
                return out.T.reshape(C_out, H, W).float()
            """,
        "receptive_field": """
            def receptive_field(patterns):
                R = torch.eye(patterns.shape[-1], dtype=torch.float64)
                for P in reversed(list(patterns)):
                    R = ((R @ (P > 0).double()) > 0).double()
                return R.sum(dim=1).long()
            """,
    },
    "scores by broadcasting in float64": {
        "relative_scores": """
            def relative_scores(L, shift, alpha):
                i = torch.arange(L, dtype=torch.float64).reshape(L, 1)
                j = torch.arange(L, dtype=torch.float64).reshape(1, L)
                return (-alpha * (j - i - shift) ** 2).float()
            """,
    },
}


def test_conv_attention_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("conv_attention", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["conv1d calls F.conv1d"].items["test_attention_conv1d"].lines))
    assert "conv1d" in line
