"""qkv: self-attention from first principles, the library behind the course.

Row convention throughout (as in PyTorch and the paper): sequences are rows; ``B`` batch,
``H`` heads, ``L`` query positions, ``S`` key positions. Boolean masks: True = may attend.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what a type checker and an editor see; at run time each name loads on first use
    from .attention import column_attention, scaled_dot_product_attention, softmax
    from .chunked import chunked_attention
    from .device import default_device
    from .encoder import TinyTransformer, TransformerEncoderLayer
    from .masks import causal_mask, graph_mask, local_mask, padding_mask
    from .multihead import MultiHeadAttention, merge_heads, split_heads
    from .positional import sinusoidal_positional_encoding, sinusoidal_shift_matrix
    from .tasks import reversal_batch, sorting_batch

# name -> the module that defines it. Loaded on first use (PEP 562), so that `import qkv` and the `qkv` command
# start without torch: `qkv check` asks its resident checker first (see qkv.checkserver), torch comes only if needed.
_HOME = {
    "column_attention": "attention",
    "scaled_dot_product_attention": "attention",
    "softmax": "attention",
    "chunked_attention": "chunked",
    "default_device": "device",
    "TinyTransformer": "encoder",
    "TransformerEncoderLayer": "encoder",
    "causal_mask": "masks",
    "graph_mask": "masks",
    "local_mask": "masks",
    "padding_mask": "masks",
    "MultiHeadAttention": "multihead",
    "merge_heads": "multihead",
    "split_heads": "multihead",
    "sinusoidal_positional_encoding": "positional",
    "sinusoidal_shift_matrix": "positional",
    "reversal_batch": "tasks",
    "sorting_batch": "tasks",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'qkv' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})


__version__ = "0.1.0"

__all__ = [
    "MultiHeadAttention",
    "TinyTransformer",
    "TransformerEncoderLayer",
    "causal_mask",
    "chunked_attention",
    "column_attention",
    "default_device",
    "graph_mask",
    "local_mask",
    "merge_heads",
    "padding_mask",
    "reversal_batch",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
    "sinusoidal_shift_matrix",
    "softmax",
    "sorting_batch",
    "split_heads",
]
