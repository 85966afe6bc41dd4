"""The examples in the library's docstrings run and print what they say."""

import doctest
import importlib

import pytest

MODULES = [
    "attention",
    "chunked",
    "corpora",
    "decoder",
    "device",
    "encoder",
    "masks",
    "multihead",
    "positional",
    "tasks",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"qkv.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in qkv.{name}"
    assert result.attempted > 0, f"qkv.{name} has no docstring example"
