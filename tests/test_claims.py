"""Numbers on the pages that come from a benchmark's JSON, checked against that JSON.

Each page that reads a file under benchmarks/results/ lists here the claims of its text that carry a number: the
glue key that puts the number into the page, the sentence it belongs to, and how to recompute it from the JSON,
written independently of the page's code (means from the raw runs, ratios from the raw rows). The test executes
the page, reads its glued values and compares. It also checks what the prose says in words about the same file
(the CNN ahead at every size, times shown only if the timing protocol's check held).

A page joins by adding a `Page` to PAGES. `mismatches` is the comparison; the last test shows that it fails when
the JSON changes under a page that was executed with the old one.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GLUE_TEXT = re.compile(r"\{glue:text\}`([A-Za-z0-9_]+)")

Claim = tuple[str, Callable[[dict], float]]  # (the sentence, the value recomputed from the JSON)


@dataclass
class Page:
    notebook: str
    results: str
    claims: dict[str, Claim]
    statements: dict[str, Callable[[dict, str], bool]] = field(default_factory=dict)  # (json, markdown) -> true?
    literals: dict[str, Callable[[dict], bool]] = field(default_factory=dict)  # words on the page -> true in JSON?


# -- cnn_rnn: benchmarks/results/data_scale.json ------------------------------------------------------------------


def _mean_accuracy(run: dict, model: str, n: int) -> float:
    return statistics.mean(r["test_accuracy"] for r in run["runs"] if r["model"] == model and r["n"] == n)


def _sizes(run: dict) -> list[int]:
    return sorted({r["n"] for r in run["runs"]})


def _seeds(run: dict, n: int) -> int:
    return len({r["seed"] for r in run["runs"] if r["n"] == n})


def _closed(run: dict, model: str) -> float:
    """Percent of the gap to the Bayes accuracy (on the test images) closed from the smallest size to the largest."""
    lo, hi = _sizes(run)[0], _sizes(run)[-1]
    before, after = _mean_accuracy(run, model, lo), _mean_accuracy(run, model, hi)
    return 100 * (after - before) / (run["bayes"]["test_accuracy"] - before)


def _gain(run: dict, model: str) -> float:
    lo, hi = _sizes(run)[0], _sizes(run)[-1]
    return 100 * (_mean_accuracy(run, model, hi) - _mean_accuracy(run, model, lo))


CNN_RNN = Page(
    notebook="chapters/cnn_rnn.ipynb",
    results="data_scale.json",
    claims={
        "bayes_pct": ("the Bayes accuracy is ... %", lambda j: 100 * j["bayes"]["accuracy"]),
        "ds_seeds_min": ("... or ... seeds per size", lambda j: min(_seeds(j, n) for n in _sizes(j))),
        "ds_seeds": ("or ... seeds per size", lambda j: max(_seeds(j, n) for n in _sizes(j))),
        "ds_patience_steps": ("no new best for ... steps", lambda j: j["settings"]["patience"] * j["eval_every"]),
        "ds_max_steps": ("the cap of ... steps", lambda j: j["settings"]["max_steps"]),
        "ds_minutes": ("these trainings took ... minutes", lambda j: j["seconds"] / 60),
        "acc_cnn_100": ("at 100 images it reaches ... %", lambda j: 100 * _mean_accuracy(j, "cnn", 100)),
        "acc_attn_100": ("against attention's ... %", lambda j: 100 * _mean_accuracy(j, "attention", 100)),
        "cnn_gap_3000": (
            "at 3,000 images it is ... points from the Bayes accuracy",
            lambda j: 100 * (j["bayes"]["test_accuracy"] - _mean_accuracy(j, "cnn", 3000)),
        ),
        "gain_attn": ("attention climbs ... points", lambda j: _gain(j, "attention")),
        "gain_cnn": ("against the CNN's ...", lambda j: _gain(j, "cnn")),
        "closed_cnn": ("the CNN closed ... % of its gap", lambda j: _closed(j, "cnn")),
        "closed_attn": ("and attention ... % of its", lambda j: _closed(j, "attention")),
        "acc_attn_10000": (
            "at 10,000 images attention reaches ... %",
            lambda j: 100 * _mean_accuracy(j, "attention", 10_000),
        ),
        "acc_cnn_10000": ("the CNN ... %", lambda j: 100 * _mean_accuracy(j, "cnn", 10_000)),
        "runs_converged": (
            "... of ... runs stopped by the patience rule",
            lambda j: sum(r["converged"] for r in j["runs"]),
        ),
        "runs_total": ("of ... runs", lambda j: len(j["runs"])),
        "steps_attn_max": (
            "attention's longest after ... steps",
            lambda j: max(r["steps"] for r in j["runs"] if r["model"] == "attention"),
        ),
        "check_cnn": ("twice the patience moved ... points for the CNN", lambda j: _check_change(j, "cnn")),
        "check_attn": ("and ... for attention", lambda j: _check_change(j, "attention")),
        "check_tolerance": ("the check accepts at most ±...", lambda j: 100 * j["patience_check"]["tolerance"]),
    },
    literals={
        "validation set (1,000 images)": lambda j: j["validation_images"] == 1000,
        "accuracy on 4,000 separate test images": lambda j: j["test_images"] == 4000,
        "noise of standard deviation 0.4": lambda j: j["settings"]["noise"] == 0.4,
        "100 to 10,000 training images": lambda j: _sizes(j)[0] == 100 and _sizes(j)[-1] == 10_000,
        "at 3,000 images it is": lambda j: 3000 in _sizes(j),
    },
    statements={
        "the run is complete": lambda j, md: j["complete"] is True,
        "the CNN stays ahead at every size": lambda j, md: all(
            _mean_accuracy(j, "cnn", n) > _mean_accuracy(j, "attention", n) for n in _sizes(j)
        ),
        "the CNN closes more of its gap (share of the gap)": lambda j, md: _closed(j, "cnn") > _closed(j, "attention"),
        "'converges' is said only if every run stopped by the rule and the patience check held": lambda j, md: (
            "trained to convergence" not in md or (j["all_converged"] and j["patience_check"]["held"])
        ),
    },
)


def _check_change(run: dict, model: str) -> float:
    """The largest size, seed 0, trained again with twice the patience: the change in points."""
    check = run["patience_check"]
    first = next(r for r in run["runs"] if r["model"] == model and r["n"] == check["n"] and r["seed"] == check["seed"])
    return 100 * (check["models"][model]["test_accuracy"] - first["test_accuracy"])


# -- at_scale: benchmarks/results/attention.json -------------------------------------------------------------------


def _row(bench: dict, impl: str, n: int | None = None) -> dict:
    n = n or max(r["N"] for r in bench["rows"])
    return next(r for r in bench["rows"] if r["impl"] == impl and r["N"] == n)


def _held(bench: dict) -> bool:
    """The same kernel under two names agrees within the tolerance at every checked length (recomputed)."""
    check = bench["same_kernel_check"]
    a, b = check["pair"]
    ratios = [
        max(_row(bench, a, n)["min_ms"], _row(bench, b, n)["min_ms"])
        / min(_row(bench, a, n)["min_ms"], _row(bench, b, n)["min_ms"])
        for n in sorted({r["N"] for r in bench["rows"]})
        if n >= check["from_N"]
    ]
    return bool(ratios) and max(ratios) <= 1 + check["tolerance"]


TIME_KEYS = {"bench_time_ratio", "bench_explicit_s", "bench_chunked_s"}

AT_SCALE = Page(
    notebook="chapters/at_scale.ipynb",
    results="attention.json",
    claims={
        "bench_n": ("at N = ...", lambda b: max(r["N"] for r in b["rows"])),
        "bench_repeats": ("for ... rounds", lambda b: len(_row(b, "explicit")["times_ms"])),
        "bench_tolerance": ("must agree within ...", lambda b: b["same_kernel_check"]["tolerance"]),
        "bench_explicit_mb": (
            "the explicit version's peak grew by ... MiB",
            lambda b: _row(b, "explicit")["peak_growth_mb"],
        ),
        "bench_chunked_mb": ("chunked attention grew by ... MiB", lambda b: _row(b, "chunked")["peak_growth_mb"]),
        "bench_mem_ratio": (
            "a fraction of ...",
            lambda b: _row(b, "chunked")["peak_growth_mb"] / _row(b, "explicit")["peak_growth_mb"],
        ),
        "bench_sdpa_mb": (
            "PyTorch's fused kernel needs only ... MiB",
            lambda b: _row(b, "torch_sdpa")["peak_growth_mb"],
        ),
        "bench_load": ("a load average of ...", lambda b: b["machine"]["load_average_1min"]),
        "bench_cpus": ("... logical CPUs", lambda b: b["machine"]["logical_cpus"]),
        "bench_threads": ("... thread(s)", lambda b: b["machine"]["torch_threads"]),
        "bench_check_worst": (
            "the two names for one kernel differed by up to ... times",
            lambda b: max(
                max(_row(b, "qkv_fused", n)["min_ms"], _row(b, "torch_sdpa", n)["min_ms"])
                / min(_row(b, "qkv_fused", n)["min_ms"], _row(b, "torch_sdpa", n)["min_ms"])
                for n in sorted({r["N"] for r in b["rows"]})
                if n >= b["same_kernel_check"]["from_N"]
            ),
        ),
        "bench_time_ratio": (
            "chunked attention took ... times the explicit version's time (only if the check held)",
            lambda b: min(_row(b, "chunked")["times_ms"]) / min(_row(b, "explicit")["times_ms"]),
        ),
        "bench_explicit_s": ("the explicit version's ... s", lambda b: min(_row(b, "explicit")["times_ms"]) / 1e3),
        "bench_chunked_s": ("chunked attention took ... s", lambda b: min(_row(b, "chunked")["times_ms"]) / 1e3),
    },
    literals={
        "from $N = 1024$ to $N = 16384$": lambda b: (
            sorted({r["N"] for r in b["rows"]}) == [1024, 2048, 4096, 8192, 16384]
        ),
        "$(B, H, N, d) = (1, 1, N, 64)$": lambda b: b["config"]["d"] == 64 and b["config"]["shape"] == "(1, 1, N, d)",
        "four versions": lambda b: len(b["implementations"]) == 4,
        "Its check held": _held,
    },
    statements={
        "the JSON's check is what the rows say": lambda b, md: b["same_kernel_check"]["held"] == _held(b),
        "the explicit version's peak is about three N x N float32 matrices": lambda b, md: (
            2.5 <= _row(b, "explicit")["peak_growth_mb"] / (4 * _row(b, "explicit")["N"] ** 2 / 2**20) <= 3.5
        ),
        "chunked attention needs a small fraction of the explicit version's memory": lambda b, md: (
            _row(b, "chunked")["peak_growth_mb"] < 0.1 * _row(b, "explicit")["peak_growth_mb"]
        ),
        "times are in the text only if the check held": lambda b, md: (
            _held(b) or not TIME_KEYS & set(GLUE_TEXT.findall(md))
        ),
    },
)

PAGES = {"cnn_rnn": CNN_RNN, "at_scale": AT_SCALE}


# -- the checks ----------------------------------------------------------------------------------------------------


def markdown(page: Page) -> str:
    nb = nbformat.read(ROOT / page.notebook, as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@functools.cache
def glued_values(notebook: str) -> dict[str, object]:
    """Execute the page (as the book does, from its folder) and return every glued value that is a plain literal."""
    path = ROOT / notebook
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = next((v for k, v in out.get("data", {}).items() if k.endswith("text/plain")), None)
            if name is None or text is None:
                continue
            try:
                values[name] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                values[name] = text  # a figure or a listing: glued, but not a number
    return values


def mismatches(page: Page, glued: dict[str, object], results: dict) -> list[str]:
    """The claims whose glued value differs from the value recomputed from ``results`` (or that are missing)."""
    wrong = []
    for key, (sentence, recompute) in page.claims.items():
        if key not in glued:
            continue  # not glued on this run (e.g. times when the check failed): `test_...page_text` decides
        expected = recompute(results)
        if not math.isclose(
            float(glued[key]), float(expected), rel_tol=1e-6, abs_tol=1e-12
        ):  # raw rounds are stored to the microsecond
            wrong.append(f"{key} ({sentence}): page {glued[key]!r}, JSON gives {expected!r}")
    return wrong


def load_results(page: Page) -> dict:
    return json.loads((RESULTS / page.results).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", PAGES)
def test_every_claim_is_on_the_page_and_every_number_the_page_uses_is_glued(name):
    page = PAGES[name]
    used = set(GLUE_TEXT.findall(markdown(page)))
    glued = glued_values(page.notebook)
    claims_not_on_page = {k for k in page.claims if k not in used and k in glued}
    assert not claims_not_on_page, f"{name}: claims listed here but not in the page's text: {claims_not_on_page}"
    missing = used - glued.keys()
    assert not missing, f"{name}: the text uses glue keys the executed page did not glue: {sorted(missing)}"


@pytest.mark.parametrize("name", PAGES)
def test_numbers_on_the_page_match_the_json(name):
    page = PAGES[name]
    glued = glued_values(page.notebook)
    assert set(page.claims) & glued.keys(), f"{name}: none of its claims was glued"
    wrong = mismatches(page, glued, load_results(page))
    assert not wrong, f"{name}: " + "; ".join(wrong)


@pytest.mark.parametrize("name", PAGES)
def test_what_the_text_says_in_words_holds_in_the_json(name):
    page = PAGES[name]
    results, text = load_results(page), markdown(page)
    false = [s for s, holds in page.statements.items() if not holds(results, text)]
    assert not false, f"{name}: statements the JSON does not support: {false}"


@pytest.mark.parametrize("name", PAGES)
def test_numbers_written_in_the_text_hold_in_the_json(name):
    page = PAGES[name]
    text = " ".join(markdown(page).split())  # a phrase may be wrapped across lines
    absent = [phrase for phrase in page.literals if " ".join(phrase.split()) not in text]
    assert not absent, f"{name}: phrases no longer on the page (update the list): {absent}"
    false = [phrase for phrase, holds in page.literals.items() if not holds(load_results(page))]
    assert not false, f"{name}: the JSON no longer says what these words on the page say: {false}"


def _nudged(value, counter=[0]):  # noqa: B006 (a counter across the walk: each float moves by a different factor)
    if isinstance(value, dict):
        return {k: _nudged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nudged(v) for v in value]
    if isinstance(value, float):
        counter[0] += 1
        return value * (1 + 1e-3 * (1 + counter[0] % 7))
    return value


@pytest.mark.parametrize("name", PAGES)
def test_a_changed_json_is_caught(name):
    """The page executed with today's JSON, compared with a JSON whose every float moved a little: every claim
    that carries a measured (float) number must be reported."""
    page = PAGES[name]
    glued = glued_values(page.notebook)
    wrong = mismatches(page, glued, _nudged(load_results(page)))
    measured = {k for k in page.claims if k in glued and isinstance(glued[k], float)}
    caught = {w.split(" ", 1)[0] for w in wrong}
    assert measured, f"{name}: no measured number to check"
    assert measured <= caught, f"{name}: a changed JSON went unnoticed for {sorted(measured - caught)}"
