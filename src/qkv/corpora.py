"""Two public-domain texts shipped with the course, and a character vocabulary to feed them to a model.

``"sonnets"`` is Shakespeare's 154 sonnets (English), ``"tang"`` 1,175 Tang quatrains in simplified
characters (Chinese), one poem a line. Both are package data (``qkv/data``, sources and licences in its
README), so they are found the same way in the book, in Colab and in an installed wheel.
"""

from __future__ import annotations

from importlib import resources

import torch

from .validate import require, require_choice, require_tensor

__all__ = ["CORPORA", "CharVocab", "read_text"]

CORPORA = ("sonnets", "tang")


def read_text(name: str) -> str:
    """The whole text of a shipped corpus: ``"sonnets"`` (95 KB) or ``"tang"`` (one quatrain a line).

    Examples
    --------
    >>> from qkv import corpora
    >>> corpora.read_text("sonnets").splitlines()[0]
    'From fairest creatures we desire increase,'
    >>> corpora.read_text("tang").splitlines()[0]
    '散影玉阶柳，含翠隐鸣蝉。微形藏叶里，乱响出风前。'
    """
    require_choice("name", name, CORPORA)
    data = resources.files("qkv") / "data"
    if name == "sonnets":
        return (data / "sonnets.txt").read_text(encoding="utf-8")
    lines = (data / "tang_quatrains.tsv").read_text(encoding="utf-8").splitlines()
    return "".join(line.split("\t")[0] + "\n" for line in lines)  # the poem; author and title are attribution


class CharVocab:
    """One token per distinct character of a text, in sorted order: ``encode`` a string to ids, ``decode`` back.

    Examples
    --------
    >>> from qkv.corpora import CharVocab
    >>> vocab = CharVocab("hello")
    >>> len(vocab), vocab.encode("hell").tolist(), vocab.decode([3, 0])
    (4, [1, 0, 2, 2], 'oe')
    """

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self._index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """Token ids ``(N,)`` (int64) of ``text``; every character must be in the vocabulary."""
        unknown = sorted(set(text) - self._index.keys())
        require(not unknown, "text", "characters of the vocabulary", f"{''.join(unknown)!r}")
        return torch.tensor([self._index[c] for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """The string of token ids (a 1-D tensor or a list of ints)."""
        ids = require_tensor("ids", torch.as_tensor(ids)).flatten().tolist()
        require(all(0 <= i < len(self) for i in ids), "ids", f"ids in [0, {len(self)})", ids)
        return "".join(self.chars[i] for i in ids)
