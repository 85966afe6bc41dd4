"""The tiny_transformer spec catches the classic bugs (each planted in the solution loses points) and keeps full
marks for correct alternatives (torch.var with correction=0, attention written out with einsum, the
cross-entropy over the class axis by transposing, SGD-free variants of the same loop)."""

from __future__ import annotations

from qkv.grading.testing import check_spec, english_lines

BLOCK_HEAD = """
        def encoder_block(x, p, num_heads, mask=None):
            def linear(h, name):
                return h @ p[f"{name}.weight"].T + p[f"{name}.bias"]
"""  # indented like the bodies below, which with_function dedents

# A forbidden call is judged on the source, and the source of every later exercise reaches the functions it calls
# (the lab forbids the ready-made parts in every answer); every other bug costs its own item only.
CALLERS_OF = {
    "layer_norm": {"test_encoder_block", "test_tiny_forward", "test_train_reversal", "test_sample"},
    "encoder_block": {"test_tiny_forward", "test_train_reversal", "test_sample"},
}
BUGS = {
    "layer norm with the unbiased variance": (
        "layer_norm",
        """
        def layer_norm(x, gamma, beta, eps=1e-5):
            mu = x.mean(dim=-1, keepdim=True)
            return gamma * (x - mu) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + beta
        """,
        {"test_layer_norm"},
    ),
    "layer norm with eps outside the square root": (
        "layer_norm",
        """
        def layer_norm(x, gamma, beta, eps=1e-5):
            mu = x.mean(dim=-1, keepdim=True)
            var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
            return gamma * (x - mu) / (torch.sqrt(var) + eps) + beta
        """,
        {"test_layer_norm"},
    ),
    "layer norm over the first axis": (
        "layer_norm",
        """
        def layer_norm(x, gamma, beta, eps=1e-5):
            mu = x.mean(dim=0, keepdim=True)
            var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
            return gamma * (x - mu) / torch.sqrt(var + eps) + beta
        """,
        {"test_layer_norm"},
    ),
    "layer norm through F.layer_norm": (
        "layer_norm",
        """
        def layer_norm(x, gamma, beta, eps=1e-5):
            return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
        """,
        {"test_layer_norm", *CALLERS_OF["layer_norm"]},
    ),
    "block in post-norm order": (
        "encoder_block",
        BLOCK_HEAD
        + """
            q, k, v = (qkv.split_heads(linear(x, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
            x = layer_norm(x + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v, mask)), "self_attn.out_proj"),
                           p["norm1.weight"], p["norm1.bias"])
            return layer_norm(x + linear(torch.relu(linear(x, "linear1")), "linear2"), p["norm2.weight"], p["norm2.bias"])
        """,
        {"test_encoder_block"},
    ),
    "block adds the residual to the normalised x": (
        "encoder_block",
        BLOCK_HEAD
        + """
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q, k, v = (qkv.split_heads(linear(h, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
            x = h + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v, mask)), "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return h + linear(torch.relu(linear(h, "linear1")), "linear2")
        """,
        {"test_encoder_block"},
    ),
    "block ignores the mask": (
        "encoder_block",
        BLOCK_HEAD
        + """
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q, k, v = (qkv.split_heads(linear(h, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
            x = x + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v)), "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return x + linear(torch.relu(linear(h, "linear1")), "linear2")
        """,
        {"test_encoder_block"},
    ),
    "block with the mask inverted": (
        "encoder_block",
        BLOCK_HEAD
        + """
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q, k, v = (qkv.split_heads(linear(h, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
            m = None if mask is None else ~mask
            x = x + linear(qkv.merge_heads(qkv.scaled_dot_product_attention(q, k, v, m)), "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return x + linear(torch.relu(linear(h, "linear1")), "linear2")
        """,
        {"test_encoder_block"},
    ),
    "block splits heads by a reshape without the transpose": (
        "encoder_block",
        BLOCK_HEAD
        + """
            B, L, d_model = x.shape
            split = lambda t: t.reshape(B, num_heads, L, d_model // num_heads)
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q, k, v = (split(linear(h, f"self_attn.{n}_proj")) for n in "qkv")
            out = qkv.scaled_dot_product_attention(q, k, v, mask).reshape(B, L, d_model)
            x = x + linear(out, "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return x + linear(torch.relu(linear(h, "linear1")), "linear2")
        """,
        {"test_encoder_block"},
    ),
    "block attention not scaled by sqrt(d_k)": (
        "encoder_block",
        BLOCK_HEAD
        + """
            h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
            q, k, v = (qkv.split_heads(linear(h, f"self_attn.{n}_proj"), num_heads) for n in "qkv")
            out = qkv.scaled_dot_product_attention(q, k, v, mask, scale=1.0)
            x = x + linear(qkv.merge_heads(out), "self_attn.out_proj")
            h = layer_norm(x, p["norm2.weight"], p["norm2.bias"])
            return x + linear(torch.relu(linear(h, "linear1")), "linear2")
        """,
        {"test_encoder_block"},
    ),
    "block through the library's encoder layer": (
        "encoder_block",
        """
        def encoder_block(x, p, num_heads, mask=None):
            layer = qkv.TransformerEncoderLayer(x.shape[-1], num_heads, p["linear1.weight"].shape[0])
            layer.load_state_dict(p)
            return layer(x, mask=mask)[0]
        """,
        {"test_encoder_block", *CALLERS_OF["encoder_block"]},
    ),
    "model without the positional encoding": (
        "tiny_forward",
        """
        def tiny_forward(tokens, p, num_heads, mask=None):
            h = p["embed.weight"][tokens]
            for l in range(count_layers(p)):
                h = encoder_block(h, block_params(p, l), num_heads, mask)
            h = layer_norm(h, p["final_norm.weight"], p["final_norm.bias"])
            return h @ p["head.weight"].T + p["head.bias"]
        """,
        {"test_tiny_forward"},  # training runs with a correct tiny_forward
    ),
    "model without the final layer norm": (
        "tiny_forward",
        """
        def tiny_forward(tokens, p, num_heads, mask=None):
            h = p["embed.weight"][tokens] + qkv.sinusoidal_positional_encoding(tokens.shape[1], p["embed.weight"].shape[1])
            for l in range(count_layers(p)):
                h = encoder_block(h, block_params(p, l), num_heads, mask)
            return h @ p["head.weight"].T + p["head.bias"]
        """,
        {"test_tiny_forward"},
    ),
    "model does not pass the mask on": (
        "tiny_forward",
        """
        def tiny_forward(tokens, p, num_heads, mask=None):
            h = p["embed.weight"][tokens] + qkv.sinusoidal_positional_encoding(tokens.shape[1], p["embed.weight"].shape[1])
            for l in range(count_layers(p)):
                h = encoder_block(h, block_params(p, l), num_heads)
            h = layer_norm(h, p["final_norm.weight"], p["final_norm.bias"])
            return h @ p["head.weight"].T + p["head.bias"]
        """,
        {"test_tiny_forward"},
    ),
    "training with a causal mask": (
        "train_reversal",
        """
        def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
            opt = torch.optim.Adam([t.requires_grad_(True) for t in p.values()], lr=lr)
            g = torch.Generator().manual_seed(seed)
            V = p["embed.weight"].shape[0]
            losses = []
            for _ in range(steps):
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                loss = F.cross_entropy(tiny_forward(x, p, num_heads, qkv.causal_mask(seq_len)).reshape(-1, V), y.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses
        """,
        {"test_train_reversal"},
    ),
    "training with targets in another order than the logits": (
        "train_reversal",
        """
        def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
            opt = torch.optim.Adam([t.requires_grad_(True) for t in p.values()], lr=lr)
            g = torch.Generator().manual_seed(seed)
            V = p["embed.weight"].shape[0]
            losses = []
            for _ in range(steps):
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                loss = F.cross_entropy(tiny_forward(x, p, num_heads).reshape(-1, V), y.T.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses
        """,
        {"test_train_reversal"},
    ),
    "training without the optimiser step": (
        "train_reversal",
        """
        def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
            params = [t.requires_grad_(True) for t in p.values()]
            g = torch.Generator().manual_seed(seed)
            V = p["embed.weight"].shape[0]
            losses = []
            for _ in range(steps):
                x, y = qkv.reversal_batch(batch_size, seq_len, V, generator=g)
                loss = F.cross_entropy(tiny_forward(x, p, num_heads).reshape(-1, V), y.reshape(-1))
                loss.backward()
                losses.append(loss.item())
            return losses
        """,
        {"test_train_reversal"},
    ),
    "sampling without the causal mask": (
        "sample",
        """
        def sample(p, num_heads, prompt_ids, n_new, temperature=1.0, generator=None):
            ids = prompt_ids
            with torch.no_grad():
                for _ in range(n_new):
                    scores = tiny_forward(ids[None], p, num_heads)[0, -1]
                    if temperature == 0:
                        next_id = scores.argmax().view(1)
                    else:
                        next_id = torch.multinomial(torch.softmax(scores / temperature, -1), 1, generator=generator)
                    ids = torch.cat([ids, next_id])
            return ids
        """,
        {"test_sample"},
    ),
    "sampling from the first position's scores": (
        "sample",
        """
        def sample(p, num_heads, prompt_ids, n_new, temperature=1.0, generator=None):
            ids = prompt_ids
            with torch.no_grad():
                for _ in range(n_new):
                    scores = tiny_forward(ids[None], p, num_heads, qkv.causal_mask(len(ids)))[0, 0]
                    if temperature == 0:
                        next_id = scores.argmax().view(1)
                    else:
                        next_id = torch.multinomial(torch.softmax(scores / temperature, -1), 1, generator=generator)
                    ids = torch.cat([ids, next_id])
            return ids
        """,
        {"test_sample"},
    ),
    "sampling without the temperature": (
        "sample",
        """
        def sample(p, num_heads, prompt_ids, n_new, temperature=1.0, generator=None):
            ids = prompt_ids
            with torch.no_grad():
                for _ in range(n_new):
                    scores = tiny_forward(ids[None], p, num_heads, qkv.causal_mask(len(ids)))[0, -1]
                    if temperature == 0:
                        next_id = scores.argmax().view(1)
                    else:
                        next_id = torch.multinomial(torch.softmax(scores, -1), 1, generator=generator)
                    ids = torch.cat([ids, next_id])
            return ids
        """,
        {"test_sample"},
    ),
    "sampling returns only the new tokens": (
        "sample",
        """
        def sample(p, num_heads, prompt_ids, n_new, temperature=1.0, generator=None):
            ids = prompt_ids
            with torch.no_grad():
                for _ in range(n_new):
                    scores = tiny_forward(ids[None], p, num_heads, qkv.causal_mask(len(ids)))[0, -1]
                    if temperature == 0:
                        next_id = scores.argmax().view(1)
                    else:
                        next_id = torch.multinomial(torch.softmax(scores / temperature, -1), 1, generator=generator)
                    ids = torch.cat([ids, next_id])
            return ids[len(prompt_ids):]
        """,
        {"test_sample"},
    ),
}

ALTERNATIVES = {
    "torch.var with correction=0, rsqrt": {
        "layer_norm": """
            def layer_norm(x, gamma, beta, eps=1e-5):
                var, mu = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
                return (x - mu) * torch.rsqrt(var + eps) * gamma + beta
            """,
    },
    "attention written out with einsum and a float64 feed-forward": {
        "encoder_block": """
            def encoder_block(x, p, num_heads, mask=None):
                B, L, d_model = x.shape
                d_k = d_model // num_heads
                h = layer_norm(x, p["norm1.weight"], p["norm1.bias"])
                def heads(name):
                    t = h @ p[f"self_attn.{name}.weight"].T + p[f"self_attn.{name}.bias"]
                    return t.reshape(B, L, num_heads, d_k)
                q, k, v = heads("q_proj"), heads("k_proj"), heads("v_proj")
                s = torch.einsum("blhd,bmhd->bhlm", q, k) / math.sqrt(d_k)
                if mask is not None:
                    s = s.masked_fill(~mask, float("-inf"))
                e = torch.exp(s - s.amax(-1, keepdim=True))
                w = e / e.sum(-1, keepdim=True)
                out = torch.einsum("bhlm,bmhd->blhd", w, v).reshape(B, L, d_model)
                x = x + out @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]
                h = layer_norm(x, p["norm2.weight"], p["norm2.bias"]).double()
                f = torch.relu(h @ p["linear1.weight"].double().T + p["linear1.bias"].double())
                return x + (f @ p["linear2.weight"].double().T + p["linear2.bias"].double()).to(x.dtype)
            """,
    },
    "cross-entropy over the class axis by transposing, a list of parameters": {
        "train_reversal": """
            def train_reversal(p, num_heads, seq_len, steps, lr=1e-2, batch_size=64, seed=0):
                for t in p.values():
                    t.requires_grad_(True)
                opt = torch.optim.Adam(list(p.values()), lr=lr)
                g = torch.Generator().manual_seed(seed)
                losses = []
                for step in range(steps):
                    x, y = qkv.reversal_batch(batch_size, seq_len, p["embed.weight"].shape[0], generator=g)
                    opt.zero_grad()
                    loss = F.cross_entropy(tiny_forward(x, p, num_heads).transpose(1, 2), y)
                    loss.backward()
                    opt.step()
                    losses.append(float(loss))
                return losses
            """,
    },
    "the probabilities by exp and normalise, ids in a list": {
        "sample": """
            def sample(p, num_heads, prompt_ids, n_new, temperature=1.0, generator=None):
                out = prompt_ids.tolist()
                for _ in range(n_new):
                    t = torch.tensor(out)
                    s = tiny_forward(t[None], p, num_heads, qkv.causal_mask(len(out)))[0, -1].detach()
                    if temperature == 0:
                        out.append(int(torch.argmax(s)))
                    else:
                        e = torch.exp((s - s.max()) / temperature)
                        out.append(int(torch.multinomial(e / e.sum(), 1, generator=generator)))
                return torch.tensor(out)
            """,
    },
}


def test_tiny_transformer_spec_catches_bugs_and_keeps_alternatives(tmp_path):
    results = check_spec("tiny_transformer", BUGS, ALTERNATIVES, tmp_path)
    line = " ".join(english_lines(results["training with a causal mask"].items["test_train_reversal"].lines))
    assert "new sequences" in line  # the accuracy message, not a crash
