"""conv_attention: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("receptive_field", "test_receptive_field", "patterns")
C1, C2 = "test_attention_conv1d", "test_attention_conv2d"

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "loops_and_prints": Sub(
        {
            "shift_weights": """
            def shift_weights(L, shift):
                A = torch.zeros(L, L)
                for i in range(L):
                    if 0 <= i + shift < L:
                        A[i, i + shift] = 1.0
                print(A)
                return A
            """,
            "relative_scores": """
            def relative_scores(L, shift, alpha):
                s = torch.empty(L, L)
                for i in range(L):
                    for j in range(L):
                        s[i, j] = -alpha * ((j - i) - shift) ** 2
                return s
            """,
        },
        why="loops, a print of the pattern",
    ),
    "eye_diagonal_einsum_chinese": Sub(
        {
            "shift_weights": """
            def shift_weights(L, shift):
                # 用偏移的对角线
                return torch.diag(torch.ones(L - abs(shift)), shift) if abs(shift) < L else torch.zeros(L, L)
            """,
            "attention_conv1d": """
            def attention_conv1d(x, weight):
                C_out, C_in, K = weight.shape
                头 = torch.stack([shift_weights(x.shape[1], t - K // 2) for t in range(K)])  # (K, L, L)
                return torch.einsum("kij,cj,ock->oi", 头, x, weight)
            """,
        },
        why="torch.eye with a diagonal offset, one einsum over all taps, Chinese names",
    ),
    "float64_helpers_plot": Sub(
        {
            "attention_conv2d": """
            def _head(H, W, dr, dc):
                return torch.kron(shift_weights(H, dr), shift_weights(W, dc)).double()

            def attention_conv2d(img, weight):
                C_out, C_in, K, _ = weight.shape
                C, H, W = img.shape
                tokens = img.double().flatten(1).T
                out = 0
                for a in range(K):
                    for b in range(K):
                        out = out + _head(H, W, a - K // 2, b - K // 2) @ tokens @ weight[:, :, a, b].double().T
                return out.T.reshape(C_out, H, W).to(img.dtype)

            plt.imshow(attention_conv2d(torch.rand(1, 5, 5), torch.ones(1, 1, 3, 3))[0])
            plt.show()
            """,
            "receptive_field": """
            def receptive_field(patterns):
                n, L, _ = patterns.shape
                reach = torch.eye(L)
                for layer in range(n):
                    reach = ((patterns[layer] != 0).float() @ reach).clamp(max=1)
                return (reach > 0).sum(1)
            """,
        },
        why="float64 inside a helper, a plot, clamp instead of booleans",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "helper_with_dtype_argument": Sub(
        {
            "shift_weights": """
            def shift_weights(L, shift, dtype=torch.float32):
                pos = torch.arange(L)
                return ((pos[None, :] - pos[:, None]) == shift).to(dtype)  # (L, L)
            """,
            "attention_conv1d": """
            def attention_conv1d(x, weight):
                C_out, C_in, K = weight.shape
                L = x.shape[1]
                out = torch.zeros(C_out, L, dtype=torch.float64)
                for t in range(K):
                    head = shift_weights(L, t - K // 2, dtype=torch.float64) @ x.double().T  # (L, C_in)
                    out += weight[:, :, t].double() @ head.T  # (C_out, L)
                return out.to(x.dtype)
            """,
        },
        why="its own helper takes an extra optional argument: shift_weights(L, shift, dtype=torch.float64)",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "scores_transposed": Sub(
        {
            "relative_scores": """
        def relative_scores(L, shift, alpha):
            pos = torch.arange(L, dtype=torch.float32)
            return -alpha * ((pos[:, None] - pos[None, :]) - shift) ** 2
        """
        },
        lose={"test_relative_scores"},
        why="i - j instead of j - i",
    ),
    "shift_with_roll": Sub(
        {
            "shift_weights": """
        def shift_weights(L, shift):
            return torch.roll(torch.eye(L), shifts=shift, dims=1)
        """
        },
        lose={"test_shift_weights"},
        why="roll wraps around instead of padding with zeros",
    ),
    "shift_boolean": Sub(
        {
            "shift_weights": """
        def shift_weights(L, shift):
            pos = torch.arange(L)
            return (pos[None, :] - pos[:, None]) == shift
        """
        },
        lose={"test_shift_weights"},
        why="booleans where the lab asks for floats (the convolutions convert them)",
    ),
    "conv1d_flipped_kernel": Sub(
        {
            "attention_conv1d": """
        def attention_conv1d(x, weight):
            C_out, C_in, K = weight.shape
            out = 0
            for t in range(K):
                out = out + shift_weights(x.shape[1], K // 2 - t) @ x.T @ weight[:, :, t].T
            return out.T
        """
        },
        lose={C1},
        why="a true convolution (flipped kernel), not PyTorch's cross-correlation",
    ),
    "conv1d_calls_torch": Sub(
        {
            "attention_conv1d": """
        def attention_conv1d(x, weight):
            return F.conv1d(x[None], weight, padding=weight.shape[-1] // 2)[0]
        """
        },
        lose={C1},
        why="a forbidden F.conv1d",
    ),
    "conv2d_flat_shift": Sub(
        {
            "attention_conv2d": """
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
        """
        },
        lose={C2},
        why="shifts the flat sequence: wraps into the neighbouring row",
    ),
    "field_float_counts": Sub(
        {
            "receptive_field": """
        def receptive_field(patterns):
            L = patterns.shape[-1]
            reach = torch.eye(L)
            for P in patterns:
                reach = ((P > 0).float() @ reach > 0).float()
            return reach.sum(dim=-1)
        """
        },
        lose={"test_receptive_field"},
        why="counts as floats where the lab asks for an integer tensor",
    ),
    "field_wrong_order": Sub(
        {
            "receptive_field": """
        def receptive_field(patterns):
            L = patterns.shape[-1]
            reach = torch.eye(L, dtype=torch.bool)
            for P in patterns:
                reach = (reach.float() @ (P > 0).float()) > 0
            return reach.sum(dim=-1)
        """
        },
        lose={"test_receptive_field"},
        why="multiplies the layers in the wrong order",
    ),
}
