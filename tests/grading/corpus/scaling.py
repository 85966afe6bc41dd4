"""scaling: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("scaling_experiment", "test_scaling_experiment", "d_k_values, num_queries=200, num_keys=64, seed=0")

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "einsum_float64_print": Sub(
        {
            "dot_product_variance": """
            def dot_product_variance(d_k_values, num_samples=20000, seed=0):
                g = torch.Generator().manual_seed(seed)
                out = torch.zeros(len(d_k_values))
                for n, d in enumerate(d_k_values):
                    q = torch.randn(num_samples, d, generator=g, dtype=torch.float64)
                    k = torch.randn(num_samples, d, generator=g, dtype=torch.float64)
                    dots = torch.einsum("nd,nd->n", q, k)
                    out[n] = ((dots - dots.mean()) ** 2).mean()
                print(out)
                return out
            """,
        },
        why="float64 draws, einsum, own variance, a print",
    ),
    "matmul_helpers_chinese": Sub(
        {
            "scaled_scores": """
            def scaled_scores(q, k):
                # 除以 sqrt(d_k)，让方差回到 1
                d = q.size(-1)
                return torch.matmul(q, k.transpose(-1, -2)) * d ** -0.5
            """,
            "saturation_stats": """
            def _entropy(w):
                return -(w * torch.log(w.clamp_min(1e-30))).sum(-1)

            def saturation_stats(q, k, scale=True):
                s = scaled_scores(q, k) if scale else q @ k.T
                w = torch.softmax(s.double(), dim=-1)
                J = torch.diag_embed(w) - torch.einsum("ns,nt->nst", w, w)
                fro = J.pow(2).sum(dim=(-2, -1)).sqrt()
                return dict(max_weight=float(w.max(-1).values.median()),
                            entropy=float(_entropy(w).median()),
                            grad_norm=float(fro.median()))
            """,
        },
        why="matmul, a clamped log helper, float64 inside, dict(), Chinese comment",
    ),
    "plain_loops_plot": Sub(
        {
            "scaling_experiment": """
            def scaling_experiment(d_k_values, num_queries=200, num_keys=64, seed=0):
                g = torch.Generator().manual_seed(seed)
                rows = []
                for d in d_k_values:
                    q = torch.randn(num_queries, d, generator=g)
                    k = torch.randn(num_keys, d, generator=g)
                    a, b = saturation_stats(q, k, True), saturation_stats(q, k, False)
                    rows.append([a["max_weight"], a["entropy"], a["grad_norm"], b["max_weight"], b["entropy"], b["grad_norm"]])
                cols = torch.tensor(rows).T
                names = ["max_weight_scaled", "entropy_scaled", "grad_norm_scaled",
                         "max_weight_unscaled", "entropy_unscaled", "grad_norm_unscaled"]
                return {n: cols[i] for i, n in enumerate(names)}

            plt.plot([1, 2], [1, 2])
            plt.show()
            """,
        },
        why="a table of rows transposed, a plot in the cell",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "pickle_and_gc_cells": Sub(
        add=(
            (
                "scaling_experiment",
                """
                import pickle

                with open("table.pkl", "wb") as f:
                    pickle.dump({"d_k": [16, 64, 256]}, f)
                """,
            ),
            ("saturation_stats", "import gc\n\nscratch = torch.zeros(1000)\ndel scratch\ngc.collect()"),
        ),
        why="import pickle in a cell that saves a table, import gc in a clean-up cell",
    ),
    "helper_with_scale_flag": Sub(
        {
            "scaled_scores": """
            def scaled_scores(q, k, scale=True):
                scores = q @ k.transpose(-2, -1)  # (..., L, S)
                return scores / math.sqrt(q.shape[-1]) if scale else scores
            """,
            "saturation_stats": """
            def saturation_stats(q, k, scale=True):
                w = torch.softmax(scaled_scores(q, k, scale=scale), dim=-1)  # (N, S)
                entropy = -torch.special.xlogy(w, w).sum(dim=-1)
                jacobian = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]  # (N, S, S)
                return {
                    "max_weight": w.amax(dim=-1).median().item(),
                    "entropy": entropy.median().item(),
                    "grad_norm": torch.linalg.matrix_norm(jacobian).median().item(),
                }
            """,
        },
        why="its own helper takes an extra optional argument: scaled_scores(q, k, scale=True)",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "variance_of_squares": Sub(
        {
            "dot_product_variance": """
        def dot_product_variance(d_k_values, num_samples=20000, seed=0):
            g = torch.Generator().manual_seed(seed)
            est = []
            for d in d_k_values:
                q, k = torch.randn(num_samples, d, generator=g), torch.randn(num_samples, d, generator=g)
                est.append((q * k).var())
            return torch.stack(est)
        """
        },
        lose={"test_dot_product_variance"},
        why="variance of the products, not of their sums",
    ),
    "variance_unseeded": Sub(
        {
            "dot_product_variance": """
        def dot_product_variance(d_k_values, num_samples=20000, seed=0):
            est = []
            for d in d_k_values:
                q, k = torch.randn(num_samples, d), torch.randn(num_samples, d)
                est.append((q * k).sum(dim=1).var())
            return torch.stack(est)
        """
        },
        lose={"test_dot_product_variance"},
        why="ignores the seed: not reproducible",
    ),
    "scores_divided_by_d_k": Sub(
        {
            "scaled_scores": """
        def scaled_scores(q, k):
            return q @ k.transpose(-2, -1) / q.shape[-1]
        """
        },
        lose={"test_scaled_scores"},
        why="divides by d_k",
    ),
    "scores_only_2d": Sub(
        {
            "scaled_scores": """
        def scaled_scores(q, k):
            return q @ k.T / math.sqrt(q.shape[-1])
        """
        },
        lose={"test_scaled_scores"},
        why="k.T: wrong for batched (..., S, d_k) inputs",
    ),
    "entropy_nan_when_saturated": Sub(
        {
            "saturation_stats": """
        def saturation_stats(q, k, scale=True):
            s = scaled_scores(q, k) if scale else q @ k.T
            w = torch.softmax(s, dim=-1)
            J = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]
            return {"max_weight": w.amax(-1).median().item(),
                    "entropy": (-(w * torch.log(w)).sum(-1)).median().item(),
                    "grad_norm": torch.linalg.matrix_norm(J).median().item()}
        """
        },
        lose={"test_saturation_stats"},
        why="0 * log 0 = nan",
    ),
    "stats_as_tensors": Sub(
        {
            "saturation_stats": """
        def saturation_stats(q, k, scale=True):
            s = scaled_scores(q, k) if scale else q @ k.T
            w = torch.softmax(s, dim=-1)
            J = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]
            return {"max_weight": w.amax(-1).median(),
                    "entropy": -torch.special.xlogy(w, w).sum(-1).median(),
                    "grad_norm": torch.linalg.matrix_norm(J).median()}
        """
        },
        lose={"test_saturation_stats"},
        why="0-d tensors where the lab asks for Python floats",
    ),
    "experiment_new_draws_unscaled": Sub(
        {
            "scaling_experiment": """
        def scaling_experiment(d_k_values, num_queries=200, num_keys=64, seed=0):
            g = torch.Generator().manual_seed(seed)
            table = {f"{s}_{m}": [] for m in ("scaled", "unscaled") for s in ("max_weight", "entropy", "grad_norm")}
            for d in d_k_values:
                q, k = torch.randn(num_queries, d, generator=g), torch.randn(num_keys, d, generator=g)
                for key, v in saturation_stats(q, k, scale=True).items():
                    table[key + "_scaled"].append(v)
                    table[key + "_unscaled"].append(v)
            return {n: torch.tensor(v) for n, v in table.items()}
        """
        },
        lose={"test_scaling_experiment"},
        why="the unscaled curves are the scaled ones",
    ),
    # --- found by a trial (issue 19) -------------------------------------------------------------------------
    "solution_under_time_magic": Sub(
        {
            "scaling_experiment": """
        %%time
        def scaling_experiment(d_k_values, num_queries=200, num_keys=64, seed=0):
            g = torch.Generator().manual_seed(seed)
            table = {f"{s}_{m}": [] for m in ("scaled", "unscaled") for s in ("max_weight", "entropy", "grad_norm")}
            for d_k in d_k_values:
                q = torch.randn(num_queries, d_k, generator=g)  # (N, d_k)
                k = torch.randn(num_keys, d_k, generator=g)  # (S, d_k)
                for mode, scale in (("scaled", True), ("unscaled", False)):
                    for stat, value in saturation_stats(q, k, scale=scale).items():
                        table[f"{stat}_{mode}"].append(value)
            return {name: torch.tensor(values) for name, values in table.items()}
        """
        },
        why="the solution in a cell run under %%time (IPython runs the body; it defines the function)",
    ),
    "pip_input_and_magics": Sub(
        add=(
            (None, "!pip install torch matplotlib\n%matplotlib inline\n%load_ext autoreload\n%autoreload 2"),
            ("scaled_scores", "name = input('Your name: ')\nprint('Hello', name)"),
            (
                "scaled_scores",
                "%timeit scaled_scores(torch.randn(4, 8), torch.randn(5, 8))\n"
                "s = %time scaled_scores(torch.randn(2, 8), torch.randn(3, 8))\nassert s.shape == (2, 3)",
            ),
            ("saturation_stats", "%%capture captured\nprint(saturation_stats(torch.randn(5, 4), torch.randn(3, 4)))"),
        ),
        why="a shell escape, set-up magics, input(), %timeit, %time with a value, %%capture: run as IPython runs them",
    ),
    "experiment_fresh_draws_unscaled": Sub(
        {
            "scaling_experiment": """
        def scaling_experiment(d_k_values, num_queries=200, num_keys=64, seed=0):
            g = torch.Generator().manual_seed(seed)
            table = {f"{s}_{m}": [] for m in ("scaled", "unscaled") for s in ("max_weight", "entropy", "grad_norm")}
            for d_k in d_k_values:
                for mode, scale in (("scaled", True), ("unscaled", False)):
                    q, k = torch.randn(num_queries, d_k, generator=g), torch.randn(num_keys, d_k, generator=g)
                    for stat, value in saturation_stats(q, k, scale=scale).items():
                        table[f"{stat}_{mode}"].append(value)
            return {n: torch.tensor(v) for n, v in table.items()}
        """
        },
        lose={"test_scaling_experiment"},
        why="fresh draws for the unscaled run (the lab asks for the same draws): nbgrader took the 2 points",
    ),
}
