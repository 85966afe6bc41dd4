"""Time is charged to what used it (limits.CallTimer): a cell that trains (many short calls of the student's
functions) runs on past one call's share; one call from a cell that never returns stops that cell only; a cell
past its own limit is stopped as that cell; a graded call past its share retires the function the grader called,
never the helper the time happened to run out in."""

from __future__ import annotations

import time

import pytest

from qkv.grading.limits import CallTimer, TimeLimit

CALL, CELL = 0.3, 1.2  # CPU seconds: one call's share, a cell's

FUNCTIONS = """
def helper(n):
    total = 0
    for i in range(n):
        total += i
    return total

def step():
    return helper(2000)

def forever():
    while True:
        helper(100)
"""


def _ns() -> dict:
    ns: dict = {}
    exec(compile(FUNCTIONS, "<cell 1>", "exec"), ns)
    return ns


def _run_cell(timer: CallTimer, source: str, ns: dict) -> None:
    timer.arm(CELL)
    try:
        exec(compile(source, "<cell 2>", "exec"), ns)
    finally:
        timer.disarm()


def test_a_cell_of_many_short_calls_runs_past_one_calls_share():
    timer, ns = CallTimer(CALL), _ns()
    start = time.process_time()
    _run_cell(timer, "import time\nt0 = time.process_time()\nwhile time.process_time() - t0 < 0.8:\n    step()\n", ns)
    assert time.process_time() - start >= 0.8  # more than twice a call's share, no TimeLimit


def test_one_call_that_never_returns_stops_the_cell_not_the_notebook():
    timer, ns = CallTimer(CALL), _ns()
    start = time.process_time()
    with pytest.raises(TimeLimit) as err:
        _run_cell(timer, "forever()\n", ns)
    used = time.process_time() - start
    assert timer.ran_past(err.value) and not timer.cell_over
    assert CALL <= used < CELL, used


def test_a_cell_past_its_own_limit_is_charged_as_the_cell():
    timer, ns = CallTimer(CALL), _ns()
    start = time.process_time()
    with pytest.raises(TimeLimit) as err:
        _run_cell(timer, "while True:\n    step()\n", ns)
    assert timer.ran_past(err.value) and timer.cell_over
    assert time.process_time() - start >= CELL


def test_a_graded_call_retires_the_function_the_grader_called():
    timer, ns = CallTimer(CALL), _ns()
    timer.arm()
    with pytest.raises(TimeLimit) as err:
        try:
            ns["forever"]()
        finally:
            timer.disarm()
    slow = timer.retire(err.value, ns)
    assert slow == {"cell": 1, "function": "forever"}
    assert ns["helper"](3) == 3  # the helper the time ran out in stays
    with pytest.raises(TimeLimit, match=r"forever \(code cell 1\) ran past"):
        ns["forever"]()


def test_a_function_stopped_in_a_cell_is_not_run_by_later_cells_but_graded_on_its_own_time():
    timer, ns = CallTimer(CALL), _ns()
    exec(compile("def slow_once(n):\n    return helper(n)\n", "<cell 1>", "exec"), ns)
    with pytest.raises(TimeLimit) as err:
        _run_cell(timer, "slow_once(10**12)\n", ns)
    assert not timer.cell_over and timer.retire(err.value, ns, cells_only=True)["function"] == "slow_once"
    with pytest.raises(TimeLimit, match="earlier"):  # a later cell: not run again
        _run_cell(timer, "slow_once(3)\n", ns)
    timer.arm()  # a graded call: run, with its own time
    try:
        assert ns["slow_once"](3) == 3
    finally:
        timer.disarm()
    timer.arm()  # a graded call that runs past its share: retired for good, under the same name
    with pytest.raises(TimeLimit) as err:
        try:
            ns["slow_once"](10**12)
        finally:
            timer.disarm()
    assert timer.retire(err.value, ns) == {"cell": 1, "function": "slow_once"}
    with pytest.raises(TimeLimit, match="earlier"):
        ns["slow_once"](3)
