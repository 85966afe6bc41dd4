"""qkv: self-attention from first principles, the library behind the course.

Row convention throughout (as in PyTorch and the paper): sequences are rows; ``B`` batch,
``H`` heads, ``L`` query positions, ``S`` key positions. Boolean masks: True = may attend.
"""

from .attention import column_attention, scaled_dot_product_attention, softmax
from .chunked import chunked_attention
from .device import default_device
from .encoder import TinyTransformer, TransformerEncoderLayer
from .masks import causal_mask, graph_mask, local_mask, padding_mask
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .positional import sinusoidal_positional_encoding, sinusoidal_shift_matrix
from .tasks import reversal_batch, sorting_batch

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
