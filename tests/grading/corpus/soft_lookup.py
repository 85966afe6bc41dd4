"""soft_lookup: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("soft_lookup", "test_soft_lookup", "query, keys, values, temperature=1.0")

CORPUS = {
    # --- correct alternatives: full marks -------------------------------------------------------------------
    "loops_and_prints": Sub(
        {
            "dot_scores": """
            def dot_scores(query, keys):
                scores = []
                for j in range(keys.shape[0]):   # one key at a time
                    s = 0.0
                    for c in range(query.shape[0]):
                        s = s + query[c] * keys[j, c]
                    scores.append(s)
                out = torch.stack(scores)
                print("scores:", out)           # debugging print of a tensor
                return out
            """,
            "stable_softmax": """
            print(torch.tensor([1.0, 2.0]))  # a print before the def, in the same cell
            def stable_softmax(scores):
                m = scores.max(dim=-1, keepdim=True).values
                e = (scores - m).exp()
                print(e.shape, e.dtype)
                return e / e.sum(-1, keepdim=True)
            """,
        },
        why="Python loops, prints of tensors inside the graded functions and before a def",
    ),
    "einsum_chinese_comments": Sub(
        {
            "dot_scores": """
            def dot_scores(query, keys):
                # 每个键和查询做点积
                return torch.einsum("nd,d->n", keys, query)
            """,
            "cosine_scores": """
            def cosine_scores(query, keys):
                # 余弦相似度：除以两个向量的长度
                长度 = torch.sqrt((keys ** 2).sum(dim=1)) * torch.sqrt((query ** 2).sum())
                return torch.einsum("nd,d->n", keys, query) / 长度
            """,
        },
        why="einsum, comments and a variable name in Chinese",
    ),
    "float64_helpers_plot": Sub(
        {
            "stable_softmax": """
            def _shift(x):
                return x - torch.logsumexp(x, dim=-1, keepdim=True)

            def stable_softmax(scores):
                s = scores.double()              # work in float64, return the input's dtype
                return torch.exp(_shift(s)).to(scores.dtype)

            w = stable_softmax(torch.tensor([1.0, 2.0, 3.0]))
            plt.bar(range(3), w.numpy())
            plt.title("softmax of 1, 2, 3")
            plt.show()
            """,
            "soft_lookup": """
            def soft_lookup(q, K, V, temperature=1.0):
                w = stable_softmax(dot_scores(q, K) * (1.0 / temperature))
                out = (w[:, None] * V).sum(dim=0)   # weighted sum of the rows
                return out, w
            """,
        },
        why="float64 inside a helper, logsumexp, a plot in the cell, odd names",
    ),
    "cosine_via_normalised_rows": Sub(
        {
            "cosine_scores": """
            def cosine_scores(query, keys):
                qn = query / query.norm()
                kn = keys / keys.norm(dim=1, keepdim=True)
                return kn @ qn
            """,
        },
        why="normalise first, then a dot product",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "vars_variable": Sub(
        {
            "stable_softmax": """
            def stable_softmax(scores):
                vars = scores - scores.amax(dim=-1, keepdim=True)  # a variable named like the builtin
                e = torch.exp(vars)
                return e / e.sum(dim=-1, keepdim=True)
            """,
        },
        add=((None, 'vars = ["query", "keys", "values"]\nprint(vars)'),),
        why="a variable named vars, in a cell and inside the softmax",
    ),
    # --- classic bugs: 0 on their own item only -----------------------------------------------------------
    "dot_scaled_by_d": Sub(
        {
            "dot_scores": """
        def dot_scores(query, keys):
            return keys @ query / query.shape[0]
        """
        },
        lose={"test_dot_scores"},
        why="cosine_scores and soft_lookup call it, and are graded with a correct dot_scores",
    ),
    "softmax_no_max_subtraction": Sub(
        {
            "stable_softmax": """
        def stable_softmax(scores):
            e = torch.exp(scores)
            return e / e.sum(dim=-1, keepdim=True)
        """
        },
        lose={"test_stable_softmax"},
        why="overflows at +-1e4; soft_lookup is graded with a correct stable_softmax",
    ),
    "cosine_without_query_norm": Sub(
        {
            "cosine_scores": """
        def cosine_scores(query, keys):
            return dot_scores(query, keys) / keys.norm(dim=1)
        """
        },
        lose={"test_cosine_scores"},
    ),
    "cosine_calls_torch": Sub(
        {
            "cosine_scores": """
        import torch.nn.functional as F
        def cosine_scores(query, keys):
            return F.cosine_similarity(query[None, :], keys, dim=1)
        """
        },
        lose={"test_cosine_scores"},
        why="a forbidden ready-made cosine",
    ),
    "softmax_first_axis": Sub(
        {
            "stable_softmax": """
        def stable_softmax(scores):
            e = torch.exp(scores - scores.amax(dim=0, keepdim=True))
            return e / e.sum(dim=0, keepdim=True)
        """
        },
        lose={"test_stable_softmax"},
    ),
    "softmax_global_max": Sub(
        {
            "stable_softmax": """
        def stable_softmax(scores):
            e = torch.exp(scores - scores.max())
            return e / e.sum(dim=-1, keepdim=True)
        """
        },
        lose={"test_stable_softmax"},
        why="one maximum for the whole tensor: rows underflow",
    ),
    "softmax_calls_torch": Sub(
        {
            "stable_softmax": """
        def stable_softmax(scores):
            return torch.softmax(scores, dim=-1)
        """
        },
        lose={"test_stable_softmax", "test_soft_lookup"},
        why="forbidden torch.softmax; soft_lookup runs it too, through the helper (the lab forbids it in every answer)",
    ),
    "lookup_times_temperature": Sub(
        {
            "soft_lookup": """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = stable_softmax(dot_scores(query, keys) * temperature)
            return weights @ values, weights
        """
        },
        lose={"test_soft_lookup"},
    ),
    "lookup_swapped_outputs": Sub(
        {
            "soft_lookup": """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = stable_softmax(dot_scores(query, keys) / temperature)
            return weights, weights @ values
        """
        },
        lose={"test_soft_lookup"},
    ),
}
