"""The fingerprint of everything that decides a grade, besides the submission and the seed: the result cache's key.

Layer: grader side, the bottom; imports torch, the standard library and ``qkv`` itself (to hash its sources and
import the lab's spec), nothing of the grader.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import torch

# What decides a grade below the package: its code, and the labs' records (``specs/<lab>.json``: the released
# cells, grade ids and points the grader checks a submission against).
GRADING_FILES = ("*.py", "*.json")


def source_digest(folder: Path) -> str:
    """SHA-256 over the paths and bytes of every ``.py`` and ``.json`` file below ``folder``."""
    h = hashlib.sha256()
    sources = {p for pattern in GRADING_FILES for p in Path(folder).rglob(pattern) if p.is_file()}
    for source in sorted(sources):
        h.update(source.relative_to(folder).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return h.hexdigest()


def spec_fingerprint(lab: str) -> str:
    """SHA-256 of everything besides the submission and the seed that decides a grade: the lab's spec and record, the
    shared contracts, the comparison and grading code, and the library the references call (every source file and
    record of the installed ``qkv``), with the versions of ``qkv`` and torch. Cached results from any other version are not reused."""
    import qkv

    importlib.import_module(f"qkv.grading.specs.{lab}")  # an unknown lab fails here, as before
    parts = (lab, qkv.__version__, torch.__version__, source_digest(Path(qkv.__file__).parent))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
