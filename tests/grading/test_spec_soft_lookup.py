"""The soft_lookup spec catches the classic bugs (each planted in the solution loses points) and keeps full
marks for correct alternatives (einsum, loops, float64 inside, other formulas)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

# A forbidden call is judged on the source, and soft_lookup's source reaches the stable_softmax it calls (the lab
# forbids it in every answer); every other bug costs its own item only.
FORBIDDEN_IN_SOFTMAX = {"test_stable_softmax", "test_soft_lookup"}
BUGS = {
    "dot scaled by d": (
        "dot_scores",
        """
        def dot_scores(query, keys):
            return keys @ query / query.shape[0]
        """,
        {"test_dot_scores"},
    ),
    "dot summed over the wrong axis": (
        "dot_scores",
        """
        def dot_scores(query, keys):
            return (keys * query).sum(dim=0)
        """,
        {"test_dot_scores"},
    ),
    "cosine without the query's norm": (
        "cosine_scores",
        """
        def cosine_scores(query, keys):
            return dot_scores(query, keys) / keys.norm(dim=1)
        """,
        {"test_cosine_scores"},
    ),
    "cosine with squared norms": (
        "cosine_scores",
        """
        def cosine_scores(query, keys):
            return dot_scores(query, keys) / (keys.norm(dim=1) ** 2 * query.norm() ** 2)
        """,
        {"test_cosine_scores"},
    ),
    "cosine calls torch's cosine_similarity": (
        "cosine_scores",
        """
        import torch.nn.functional as F
        def cosine_scores(query, keys):
            return F.cosine_similarity(query[None, :], keys, dim=1)
        """,
        {"test_cosine_scores"},
    ),
    "softmax without the max-subtraction (overflows)": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            e = torch.exp(scores)
            return e / e.sum(dim=-1, keepdim=True)
        """,
        {"test_stable_softmax"},
    ),
    "softmax over the first axis": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            e = torch.exp(scores - scores.amax(dim=0, keepdim=True))
            return e / e.sum(dim=0, keepdim=True)
        """,
        {"test_stable_softmax"},
    ),
    "softmax with one global maximum (underflows)": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            e = torch.exp(scores - scores.max())
            return e / e.sum(dim=-1, keepdim=True)
        """,
        {"test_stable_softmax"},
    ),
    "softmax subtracting the minimum": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            e = torch.exp(scores - scores.amin(dim=-1, keepdim=True))
            return e / e.sum(dim=-1, keepdim=True)
        """,
        {"test_stable_softmax"},
    ),
    "softmax calls torch.softmax": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            return torch.softmax(scores, dim=-1)
        """,
        FORBIDDEN_IN_SOFTMAX,
    ),
    "softmax as a method, imported under another name": (
        "stable_softmax",
        """
        from torch.nn.functional import softmax as normalise
        def stable_softmax(scores):
            return normalise(scores, -1)
        """,
        FORBIDDEN_IN_SOFTMAX,
    ),
    "softmax through getattr": (
        "stable_softmax",
        """
        def stable_softmax(scores):
            return getattr(scores, "soft" + "max")(-1)
        """,
        FORBIDDEN_IN_SOFTMAX,
    ),
    "lookup multiplies by the temperature": (
        "soft_lookup",
        """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = stable_softmax(dot_scores(query, keys) * temperature)
            return weights @ values, weights
        """,
        {"test_soft_lookup"},
    ),
    "lookup ignores the temperature": (
        "soft_lookup",
        """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = stable_softmax(dot_scores(query, keys))
            return weights @ values, weights
        """,
        {"test_soft_lookup"},
    ),
    "lookup returns (weights, out)": (
        "soft_lookup",
        """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = stable_softmax(dot_scores(query, keys) / temperature)
            return weights, weights @ values
        """,
        {"test_soft_lookup"},
    ),
    "lookup with a default temperature of 0.5": (
        "soft_lookup",
        """
        def soft_lookup(query, keys, values, temperature=0.5):
            weights = stable_softmax(dot_scores(query, keys) / temperature)
            return weights @ values, weights
        """,
        {"test_soft_lookup"},
    ),
    "lookup calls the library": (
        "soft_lookup",
        """
        def soft_lookup(query, keys, values, temperature=1.0):
            weights = qkv.softmax(keys @ query / temperature)
            return weights @ values, weights
        """,
        {"test_soft_lookup"},
    ),
}

ALTERNATIVES = {
    "einsum and query @ keys.T": {
        "dot_scores": "def dot_scores(query, keys):\n    return torch.einsum('d,nd->n', query, keys)\n",
        "soft_lookup": """
            def soft_lookup(query, keys, values, temperature=1.0):
                w = stable_softmax((query @ keys.T) / temperature)
                return values.T @ w, w
            """,
    },
    "loops": {
        "dot_scores": """
            def dot_scores(query, keys):
                out = torch.zeros(keys.shape[0], dtype=keys.dtype)
                for j in range(keys.shape[0]):
                    for c in range(keys.shape[1]):
                        out[j] += query[c] * keys[j, c]
                return out
            """,
        "stable_softmax": """
            def stable_softmax(scores):
                flat = scores.reshape(-1, scores.shape[-1])
                rows = []
                for row in flat:
                    e = torch.exp(row - row.max())
                    rows.append(e / e.sum())
                return torch.stack(rows).reshape(scores.shape)
            """,
    },
    "float64 inside, normalise and logsumexp": {
        "cosine_scores": """
            def cosine_scores(query, keys):
                q = torch.nn.functional.normalize(query.double(), dim=0)
                k = torch.nn.functional.normalize(keys.double(), dim=1)
                return k @ q
            """,
        "stable_softmax": """
            def stable_softmax(scores):
                s = scores.double()
                return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
            """,
        "soft_lookup": """
            def soft_lookup(query, keys, values, temperature=1.0):
                w = stable_softmax(dot_scores(query.double(), keys.double()) / temperature)
                return (w[:, None] * values.double()).sum(dim=0), w
            """,
    },
}


def test_soft_lookup_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("soft_lookup", BUGS, ALTERNATIVES, tmp_path)
    # The forbidden calls are named in the feedback, with the reason.
    line = " ".join(english_lines(results["softmax calls torch.softmax"].items["test_stable_softmax"].lines))
    assert "torch.softmax" in line and "forbids" in line
    # getattr on a tensor is ordinary Python; the softmax it reaches trips in the sandbox and is named.
    line = " ".join(english_lines(results["softmax through getattr"].items["test_stable_softmax"].lines))
    assert "torch.Tensor.softmax" in line and "forbids" in line
