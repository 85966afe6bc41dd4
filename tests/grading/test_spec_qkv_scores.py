"""The qkv_scores spec catches the classic bugs (each planted in the solution loses points) and keeps full marks
for correct alternatives (einsum, loops, float64 inside, the other convention where it is equivalent)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

BUGS = {
    "projections return transposes": (
        "project",
        """
        def project(x, W_q, W_k, W_v):
            return W_q.T @ x.T, W_k.T @ x.T, W_v.T @ x.T
        """,
        {"test_project"},
    ),
    "keys and values swapped": (
        "project",
        """
        def project(x, W_q, W_k, W_v):
            return x @ W_q, x @ W_v, x @ W_k
        """,
        {"test_project"},
    ),
    "keys projected with W_q": (
        "project",
        """
        def project(x, W_q, W_k, W_v):
            return x @ W_q, x @ W_q, x @ W_v
        """,
        {"test_project"},
    ),
    "score matrix transposed (S, L)": (
        "score_matrix_rows",
        """
        def score_matrix_rows(q, k):
            return k @ q.T
        """,
        {"test_score_matrix_rows"},
    ),
    "score matrix already scaled": (
        "score_matrix_rows",
        """
        def score_matrix_rows(q, k):
            return q @ k.T / math.sqrt(q.shape[-1])
        """,
        {"test_score_matrix_rows"},
    ),
    "attention without scaling": (
        "attention_rows",
        """
        def attention_rows(q, k, v):
            weights = torch.softmax(score_matrix_rows(q, k), dim=-1)
            return weights @ v, weights
        """,
        {"test_attention_rows"},
    ),
    "attention scaled by d_k": (
        "attention_rows",
        """
        def attention_rows(q, k, v):
            weights = torch.softmax(score_matrix_rows(q, k) / q.shape[-1], dim=-1)
            return weights @ v, weights
        """,
        {"test_attention_rows"},
    ),
    "softmax over the queries (wrong axis)": (
        "attention_rows",
        """
        def attention_rows(q, k, v):
            weights = torch.softmax(score_matrix_rows(q, k) / math.sqrt(q.shape[-1]), dim=0)
            return weights @ v, weights
        """,
        {"test_attention_rows"},
    ),
    "returns (weights, out)": (
        "attention_rows",
        """
        def attention_rows(q, k, v):
            weights = torch.softmax(score_matrix_rows(q, k) / math.sqrt(q.shape[-1]), dim=-1)
            return weights, weights @ v
        """,
        {"test_attention_rows"},
    ),
    "calls PyTorch's fused attention": (
        "attention_rows",
        """
        import torch.nn.functional as F
        def attention_rows(q, k, v):
            weights = torch.softmax(score_matrix_rows(q, k) / math.sqrt(q.shape[-1]), dim=-1)
            return F.scaled_dot_product_attention(q[None], k[None], v[None])[0], weights
        """,
        {"test_attention_rows"},
    ),
    "calls the library's attention": (
        "attention_rows",
        """
        def attention_rows(q, k, v):
            return qkv.scaled_dot_product_attention(q, k, v, return_weights=True)
        """,
        {"test_attention_rows"},
    ),
    "column softmax along the rows of A": (
        "attention_columns",
        """
        def attention_columns(Q, K, V):
            A = K.T @ Q / math.sqrt(Q.shape[0])
            return V @ torch.softmax(A, dim=1)
        """,
        {"test_attention_columns"},
    ),
    "column scores Q^T K instead of K^T Q": (
        "attention_columns",
        """
        def attention_columns(Q, K, V):
            A = Q.T @ K / math.sqrt(Q.shape[0])
            return V @ torch.softmax(A, dim=0)
        """,
        {"test_attention_columns"},
    ),
    "column form without scaling": (
        "attention_columns",
        """
        def attention_columns(Q, K, V):
            return V @ torch.softmax(K.T @ Q, dim=0)
        """,
        {"test_attention_columns"},
    ),
    "column form calls the library": (
        "attention_columns",
        """
        def attention_columns(Q, K, V):
            return qkv.column_attention(Q, K, V)
        """,
        {"test_attention_columns"},
    ),
}

ALTERNATIVES = {
    "einsum everywhere": {
        "project": """
            def project(x, W_q, W_k, W_v):
                return (torch.einsum('lm,md->ld', x, W_q), torch.einsum('lm,md->ld', x, W_k),
                        torch.einsum('lm,md->ld', x, W_v))
            """,
        "score_matrix_rows": "def score_matrix_rows(q, k):\n    return torch.einsum('ld,sd->ls', q, k)\n",
        "attention_columns": """
            def attention_columns(Q, K, V):
                A = torch.einsum('ds,dl->sl', K, Q) / Q.shape[0] ** 0.5
                return torch.einsum('vs,sl->vl', V, torch.softmax(A, dim=0))
            """,
    },
    "loops and a hand-written softmax": {
        "score_matrix_rows": """
            def score_matrix_rows(q, k):
                out = torch.empty(q.shape[0], k.shape[0])
                for i in range(q.shape[0]):
                    for j in range(k.shape[0]):
                        out[i, j] = (q[i] * k[j]).sum()
                return out
            """,
        "attention_rows": """
            def attention_rows(q, k, v):
                s = score_matrix_rows(q, k) / math.sqrt(q.shape[-1])
                e = torch.exp(s - s.amax(dim=-1, keepdim=True))
                w = e / e.sum(dim=-1, keepdim=True)
                return torch.stack([(w[i][:, None] * v).sum(0) for i in range(w.shape[0])]), w
            """,
    },
    "float64 inside, the column form through the transpose": {
        "attention_rows": """
            def attention_rows(q, k, v):
                s = (q.double() @ k.double().T) / q.shape[1] ** 0.5
                w = s.softmax(dim=1)
                return (w @ v.double()).float(), w.float()
            """,
        "attention_columns": """
            def attention_columns(Q, K, V):
                out, _ = attention_rows(Q.T, K.T, V.T)
                return out.T
            """,
    },
}


def test_qkv_scores_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("qkv_scores", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["calls PyTorch's fused attention"].items["test_attention_rows"].lines))
    assert "scaled_dot_product_attention" in line
