"""qkv_scores: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("project", "test_project", "x, W_q, W_k, W_v")  # no other answer calls project
ROWS, COLS, AGREE = "test_attention_rows", "test_attention_columns", "test_conventions_agree"

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "einsum_and_prints": Sub(
        {
            "project": """
            def project(x, W_q, W_k, W_v):
                q = torch.einsum("lm,mk->lk", x, W_q)
                k = torch.einsum("lm,mk->lk", x, W_k)
                v = torch.einsum("lm,mv->lv", x, W_v)
                print("q", q)   # debugging
                return (q, k, v)
            """,
            "attention_rows": """
            def attention_rows(q, k, v):
                scores = score_matrix_rows(q, k) / q.shape[-1] ** 0.5
                print(scores.shape)
                weights = scores.softmax(dim=-1)
                return weights @ v, weights
            """,
        },
        why="einsum, tensor method softmax, prints",
    ),
    "loops_chinese_float64": Sub(
        {
            "score_matrix_rows": """
            def score_matrix_rows(q, k):
                # 逐个计算每个查询和每个键的点积
                L, S = q.shape[0], k.shape[0]
                得分 = torch.zeros(L, S, dtype=torch.float64)
                for i in range(L):
                    for j in range(S):
                        得分[i, j] = torch.dot(q[i].double(), k[j].double())
                return 得分.to(q.dtype)
            """,
            "attention_columns": """
            def attention_columns(Q, K, V):
                # 列约定：每一列是一个词
                A = (K.T.double() @ Q.double()) / math.sqrt(Q.shape[0])
                A = A - A.max(dim=0, keepdim=True).values
                A = A.exp() / A.exp().sum(dim=0, keepdim=True)
                return (V.double() @ A).float()
            """,
        },
        why="loops, float64 inside, own column softmax, Chinese names and comments",
    ),
    "helpers_and_plot": Sub(
        {
            "attention_rows": """
            def _scale(s, d):
                return s / math.sqrt(d)

            def attention_rows(q, k, v):
                w = torch.softmax(_scale(q @ k.transpose(0, 1), k.shape[1]), dim=1)
                return torch.matmul(w, v), w

            _, w_demo = attention_rows(torch.randn(4, 8), torch.randn(5, 8), torch.randn(5, 2))
            plt.imshow(w_demo.numpy())
            plt.colorbar()
            plt.show()
            """,
        },
        why="a helper, transpose(0, 1), a heat map in the cell",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "project_swaps_k_v": Sub(
        {
            "project": """
        def project(x, W_q, W_k, W_v):
            return x @ W_q, x @ W_v, x @ W_k
        """
        },
        lose={"test_project"},
    ),
    "project_transposed_weights": Sub(
        {
            "project": """
        def project(x, W_q, W_k, W_v):
            return (W_q.T @ x.T).T, (W_k.T @ x.T).T, (W_k.T @ x.T).T
        """
        },
        lose={"test_project"},
        why="values from W_k",
    ),
    "rows_scaled_by_d_k": Sub(
        {
            "attention_rows": """
        def attention_rows(q, k, v):
            w = torch.softmax(score_matrix_rows(q, k) / q.shape[-1], dim=-1)
            return w @ v, w
        """
        },
        lose={ROWS},
        why="scaled by d_k: the columns are right, so the disagreement is the row item's loss only",
    ),
    "rows_softmax_over_queries": Sub(
        {
            "attention_rows": """
        def attention_rows(q, k, v):
            w = torch.softmax(score_matrix_rows(q, k) / math.sqrt(q.shape[-1]), dim=0)
            return w @ v, w
        """
        },
        lose={ROWS},
    ),
    "both_without_scale": Sub(
        {
            "attention_rows": """
            def attention_rows(q, k, v):
                w = torch.softmax(score_matrix_rows(q, k), dim=-1)
                return w @ v, w
            """,
            "attention_columns": """
            def attention_columns(Q, K, V):
                return V @ torch.softmax(K.T @ Q, dim=0)
            """,
        },
        lose={ROWS, COLS},
        why="both unscaled: each is wrong, yet the two agree (the agreement point stays)",
    ),
    "columns_softmax_wrong_axis": Sub(
        {
            "attention_columns": """
        def attention_columns(Q, K, V):
            A = K.T @ Q / math.sqrt(Q.shape[0])
            return V @ torch.softmax(A, dim=1)
        """
        },
        lose={COLS},
    ),
    "columns_calls_library": Sub(
        {
            "attention_columns": """
        def attention_columns(Q, K, V):
            return qkv.column_attention(Q, K, V)
        """
        },
        lose={COLS},
        why="a forbidden ready-made column attention (it agrees with the rows: the agreement point stays)",
    ),
    "columns_through_buggy_rows": Sub(
        {
            "attention_rows": """
            def attention_rows(q, k, v):
                w = torch.softmax(score_matrix_rows(q, k) / q.shape[-1], dim=-1)
                return w @ v, w
            """,
            "attention_columns": """
            def attention_columns(Q, K, V):
                out, _ = attention_rows(Q.T, K.T, V.T)  # the row form, transposed
                return out.T
            """,
        },
        lose={ROWS},
        why="one bug in the rows, which the columns reuse: graded with a correct attention_rows, the columns pass",
    ),
    "both_wrong_differently": Sub(
        {
            "attention_rows": """
            def attention_rows(q, k, v):
                w = torch.softmax(score_matrix_rows(q, k) / q.shape[-1], dim=-1)
                return w @ v, w
            """,
            "attention_columns": """
            def attention_columns(Q, K, V):
                return V @ torch.softmax(K.T @ Q, dim=0)
            """,
        },
        lose={ROWS, COLS, AGREE},
        why="rows scaled by d_k, columns unscaled: two bugs, and the two forms disagree",
    ),
}
