"""Train the character-level decoders the Transformer chapter loads, and write them as package data.

For each corpus (``qkv.corpora``: Shakespeare's sonnets, Tang quatrains) a ``qkv.TinyTransformer`` under a causal
mask learns to predict the next character (``qkv.decoder.train_lm``: AdamW, random windows, seeded), on the CPU
with one thread. The weights go to ``src/qkv/data/decoder_<corpus>.pt`` in float16 with the vocabulary, the
settings, the machine's load and every 10th loss (``qkv.decoder.save_decoder``); the chapter trains the same
model for a few dozen steps live and shows both.

    PYTHONPATH=src python tools/train_decoder.py                 # both corpora, the settings below
    PYTHONPATH=src python tools/train_decoder.py tang --steps 200  # a quick try (writes the file too)
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

import qkv
from qkv import corpora
from qkv.decoder import save_decoder, train_lm

DATA = Path(__file__).resolve().parent.parent / "src" / "qkv" / "data"
# two blocks of width 64 with 4 heads: a few hundred KB in float16; 3,000 steps take 5-20 minutes on one CPU thread;
# a context of 64 characters holds a line and a half of a sonnet, or two quatrains
CONFIGS = {
    "sonnets": {"d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 256, "max_len": 64},
    "tang": {"d_model": 64, "num_heads": 4, "num_layers": 2, "d_ff": 256, "max_len": 64},
}
TRAINING = {"batch_size": 32, "lr": 3e-3, "seed": 0}


def train(name: str, steps: int) -> Path:
    text = corpora.read_text(name)
    vocab = corpora.CharVocab(text)
    config = CONFIGS[name]
    torch.manual_seed(TRAINING["seed"])
    model = qkv.TinyTransformer(len(vocab), **config)
    start = time.perf_counter()
    losses = train_lm(model, vocab.encode(text), steps, seq_len=config["max_len"], **TRAINING)
    seconds = time.perf_counter() - start
    path = DATA / f"decoder_{name}.pt"
    meta = {
        "steps": steps,
        "seconds": round(seconds, 1),
        "seq_len": config["max_len"],
        **TRAINING,
        "losses_every_10": [round(v, 4) for v in losses[::10]],
        "final_loss": round(sum(losses[-100:]) / len(losses[-100:]), 4),
        "machine": f"{platform.processor() or platform.machine()}, 1 thread, load {os.getloadavg()[0]:.1f}",
        "torch": str(torch.__version__),
    }
    save_decoder(path, model, vocab, config, **meta)
    print(f"{name}: {steps} steps in {seconds:.0f} s, loss {meta['final_loss']:.3f}, {path.stat().st_size:,} bytes")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="*", default=list(corpora.CORPORA), help="sonnets, tang or both")
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # small matrices: one thread, and the result does not depend on the core count
    for name in args.corpora:
        train(name, args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
