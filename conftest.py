"""nbval runs every blank lab cell by cell (`make test`: --nbval-lax), where a cell tagged ``raises-exception`` may
raise. In a blank lab such a cell must raise: it checks a function the student has yet to write, so a tagged cell
that passes there checks nothing. This root conftest holds that check for nbval's own run (tests/conftest.py would
reach only tests/); the solutions' side, that no tagged cell raises, is checked where they run
(tests/ways_in/test_colab_labs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)  # tests/test_notebooks.py runs nbval on notebooks of its own


def _blank_lab_cell(item: pytest.Item) -> bool:
    """Whether ``item`` is nbval's run of a cell of a blank lab (labs/<lab>/<lab>.ipynb) tagged to raise."""
    options = getattr(item, "options", None)
    if type(item).__name__ != "IPyNbCell" or not options or not options.get("check_exception"):
        return False
    path, root = Path(item.path).resolve(), item.config.rootpath.resolve()
    return path.is_relative_to(root) and path.relative_to(root).parts[0] == "labs"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    if _blank_lab_cell(item) and not any(o.get("output_type") == "error" for o in item.test_outputs or []):
        raise AssertionError(
            f"{item.name} of {item.path.name} is tagged raises-exception, yet it raised nothing in the blank lab"
        )
    return result
