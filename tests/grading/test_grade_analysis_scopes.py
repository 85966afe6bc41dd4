"""The source analysis treats a function's nested ``def``/``class`` as local: a helper ``f`` inside the graded
function is not confused with an unrelated top-level ``f``, while a forbidden call inside the nested helper is
still found (its body is part of the graded function's source)."""

from __future__ import annotations

from qkv.grading.analysis import analyse

FORBID = ("qkv.sinusoidal_positional_encoding",)
UNRELATED = "f = lambda z: qkv.sinusoidal_positional_encoding(3, 4)\n"


def test_a_nested_def_shadows_a_top_level_name():
    graded = "def g(x):\n    def f(y):\n        return y + 1\n    return f(x)\n"
    found = analyse(["import qkv\n", graded, UNRELATED], "g", FORBID)
    assert found.forbidden == []


def test_a_nested_class_shadows_a_top_level_name():
    graded = "def g(x):\n    class f:\n        k = 2\n    return x * f.k\n"
    assert analyse(["import qkv\n", graded, UNRELATED], "g", FORBID).forbidden == []


def test_a_forbidden_call_inside_a_nested_def_is_still_found():
    graded = "def g(x):\n    def f(y):\n        return qkv.sinusoidal_positional_encoding(y, 4)\n    return f(x)\n"
    assert analyse(["import qkv\n", graded], "g", FORBID).forbidden == ["qkv.sinusoidal_positional_encoding"]


def test_a_top_level_helper_is_still_followed():
    graded = "def g(x):\n    return f(x)\n"
    assert analyse(["import qkv\n", graded, UNRELATED], "g", FORBID).forbidden == ["qkv.sinusoidal_positional_encoding"]
