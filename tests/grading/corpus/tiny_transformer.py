"""tiny_transformer: realistic submissions and what a fair teacher gives them (see build.py for the format)."""

from build import Sub

LAST = ("train_reversal", "test_train_reversal", "p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0")

CORPUS = {
    # --- correct alternatives -----------------------------------------------------------------------------
    "var_correction_print": Sub(
        {
            "layer_norm": """
            def layer_norm(x, gamma, beta, eps=1e-5):
                mean = x.mean(-1, keepdim=True)
                var = x.var(-1, keepdim=True, unbiased=False)
                y = (x - mean) * torch.rsqrt(var + eps)
                print("normalised", y.shape, y.flatten()[:3])
                return y * gamma + beta
            """,
        },
        why="var(unbiased=False), rsqrt, a print of a tensor",
    ),
    "own_attention_chinese": Sub(
        {
            "encoder_block": """
            def encoder_block(x, p, num_heads, mask=None):
                B, L, D = x.shape
                d_k = D // num_heads
                lin = lambda h, n: F.linear(h, p[n + ".weight"], p[n + ".bias"])
                # 注意力子层
                h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
                q, k, v = (lin(h, f"self_attn.{n}_proj").view(B, L, num_heads, d_k).transpose(1, 2) for n in "qkv")
                s = q @ k.transpose(-1, -2) / math.sqrt(d_k)
                if mask is not None:
                    s = s.masked_fill(~mask, float("-inf"))
                w = torch.softmax(s, dim=-1)
                x = x + lin((w @ v).transpose(1, 2).reshape(B, L, D), "self_attn.out_proj")
                # 前馈子层
                h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
                return x + lin(F.relu(lin(h, "linear1")), "linear2")
            """,
        },
        why="own masked attention, F.linear through a lambda, Chinese comments",
    ),
    "forward_own_pe_and_sgd_plot": Sub(
        {
            "tiny_forward": """
            def tiny_forward(tokens, p, num_heads, mask=None):
                L = tokens.shape[1]
                E = p["embed.weight"]
                pos = torch.arange(L, dtype=torch.float64)[:, None]
                i2 = torch.arange(0, E.shape[1], 2, dtype=torch.float64)
                pe = torch.zeros(L, E.shape[1], dtype=torch.float64)
                pe[:, 0::2] = torch.sin(pos / 10000 ** (i2 / E.shape[1]))
                pe[:, 1::2] = torch.cos(pos / 10000 ** (i2 / E.shape[1]))
                h = E[tokens] + pe.to(E.dtype)
                for l in range(count_layers(p)):
                    h = encoder_block(h, block_params(p, l), num_heads, mask)
                return layer_norm(h, p["final_norm.weight"], p["final_norm.bias"]) @ p["head.weight"].T + p["head.bias"]
            """,
            "train_reversal": """
            def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
                for t in p.values():
                    t.requires_grad_(True)
                opt = torch.optim.Adam(list(p.values()), lr=lr)
                g = torch.Generator().manual_seed(seed)
                V = p["embed.weight"].shape[0]
                history = []
                for step in range(steps):
                    x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                    logits = tiny_forward(x, p, num_heads)
                    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    history.append(float(loss))
                return history

            plt.plot([3.0, 2.0, 1.0])
            plt.show()
            """,
        },
        why="its own positional encoding, flatten, float(loss), a plot",
    ),
    # --- trial findings (issue 19): correct work the grader once judged by names ---------------------------
    "lab_helpers_in_explore_cell": Sub(
        add=(
            (
                "train_reversal",
                """
                p_mine = make_params(seed=3)
                model = reference_model(p_mine, num_heads=2)
                x, y = qkv.reversal_batch(4, 8, 10, generator=torch.Generator().manual_seed(0))
                print(model(x)[0].shape, tiny_forward(x, p_mine, 2).shape)
                """,
            ),
        ),
        why="the lab's own make_params and reference_model (qkv.TinyTransformer inside) in an explore cell",
    ),
    # --- classic bugs -------------------------------------------------------------------------------------
    "norm_unbiased_variance": Sub(
        {
            "layer_norm": """
        def layer_norm(x, gamma, beta, eps=1e-5):
            return gamma * (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) + beta
        """
        },
        lose={"test_layer_norm"},
        why="the unbiased variance (d - 1)",
    ),
    "norm_eps_outside": Sub(
        {
            "layer_norm": """
        def layer_norm(x, gamma, beta, eps=1e-5):
            mu = x.mean(dim=-1, keepdim=True)
            sd = ((x - mu) ** 2).mean(dim=-1, keepdim=True).sqrt()
            return gamma * (x - mu) / (sd + eps) + beta
        """
        },
        lose={"test_layer_norm"},
        why="eps outside the square root",
    ),
    "block_ignores_mask": Sub(
        {
            "encoder_block": """
        def encoder_block(x, p, num_heads, mask=None):
            def linear(h, name):
                return h @ p[f"{name}.weight"].T + p[f"{name}.bias"]
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q = qkv.split_heads(linear(h, "self_attn.q_proj"), num_heads)
            k = qkv.split_heads(linear(h, "self_attn.k_proj"), num_heads)
            v = qkv.split_heads(linear(h, "self_attn.v_proj"), num_heads)
            x = x + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v)), "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return x + linear(torch.relu(linear(h, "linear1")), "linear2")
        """
        },
        lose={"test_encoder_block"},
        why="drops the mask",
    ),
    "forward_without_positions": Sub(
        {
            "tiny_forward": """
        def tiny_forward(tokens, p, num_heads, mask=None):
            h = p["embed.weight"][tokens]
            for l in range(count_layers(p)):
                h = encoder_block(h, block_params(p, l), num_heads, mask)
            h = layer_norm(h, p["final_norm.weight"], p["final_norm.bias"])
            return h @ p["head.weight"].T + p["head.bias"]
        """
        },
        lose={"test_tiny_forward"},
        why="no positional encoding: the forward is wrong; training is graded with a correct forward",
    ),
    "forward_drops_mask": Sub(
        {
            "tiny_forward": """
        def tiny_forward(tokens, p, num_heads, mask=None):
            B, L = tokens.shape
            h = p["embed.weight"][tokens] + qkv.sinusoidal_positional_encoding(L, p["embed.weight"].shape[1])
            for l in range(count_layers(p)):
                h = encoder_block(h, block_params(p, l), num_heads)
            h = layer_norm(h, p["final_norm.weight"], p["final_norm.bias"])
            return h @ p["head.weight"].T + p["head.bias"]
        """
        },
        lose={"test_tiny_forward"},
        why="does not pass the mask to the blocks (training uses none)",
    ),
    "train_positions_as_classes": Sub(
        {
            "train_reversal": """
        def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
            params = [t.requires_grad_(True) for t in p.values()]
            opt = torch.optim.Adam(params, lr=lr)
            g = torch.Generator().manual_seed(seed)
            V = p["embed.weight"].shape[0]
            losses = []
            for _ in range(steps):
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                loss = F.cross_entropy(tiny_forward(x, p, num_heads), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses
        """
        },
        lose={"test_train_reversal"},
        why="(B, L, V) logits into cross_entropy: positions taken as classes",
    ),
    "train_no_zero_grad_tensor_losses": Sub(
        {
            "train_reversal": """
        def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
            params = [t.requires_grad_(True) for t in p.values()]
            opt = torch.optim.Adam(params, lr=lr)
            g = torch.Generator().manual_seed(seed)
            V = p["embed.weight"].shape[0]
            losses = []
            for _ in range(steps):
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                loss = F.cross_entropy(tiny_forward(x, p, num_heads).reshape(-1, V), y.reshape(-1))
                loss.backward()
                opt.step()
                losses.append(loss)
            return losses
        """
        },
        lose={"test_train_reversal"},
        why="tensors with grad as losses, where the lab asks for floats",
    ),
    # --- found by a trial (issue 19) -------------------------------------------------------------------------
    "uses_selfcheck_variables": Sub(
        add=(
            (
                "test_train_reversal",
                "print({name: tuple(t.shape) for name, t in p_train.items()})\nprint('last loss', losses[-1])",
            ),
        ),
        why="an explore cell reads p_train, which the lab's self-check cell (it imports qkv.selfcheck) defines",
    ),
}
