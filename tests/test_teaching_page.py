"""The instructors' page, chapters/teaching.md, cannot go stale: every code block marked ``:class: tested`` runs
here, as written, from a copy of the repository next to a course folder, in the page's order; the results are
then checked (the nbgrader release equals labs/, the student branch reaches its remote without solutions,
the Gradescope README names a container). The page's nbgitpuller link is the one ``qkv`` builds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from qkv.course import nbgitpuller_link
from qkv.grading.messages import SUMMARY_TITLE, translator

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "chapters" / "teaching.md"
BLOCK = re.compile(r"^```\{code-block\} bash\n((?::\w+:[^\n]*\n)+)(.*?)^```$", re.M | re.S)
SOLUTION = REPO / "solutions" / "soft_lookup" / "soft_lookup.ipynb"


def _tested_blocks() -> dict[str, str]:
    """The page's tested blocks, in order: {name: commands}."""
    blocks = {}
    for options, body in BLOCK.findall(PAGE.read_text()):
        opts = dict(re.findall(r"^:(\w+): *(.*)$", options, re.M))
        if opts.get("class") == "tested":
            blocks[opts["name"]] = body
    return blocks


def test_every_tested_block_runs(tmp_path):
    blocks = _tested_blocks()
    assert list(blocks) == [
        "teaching-nbgrader",
        "teaching-grade",
        "teaching-grade-zh",
        "teaching-student-dist",
        "teaching-gradescope",
    ]
    checkout = tmp_path / "qkv"
    shutil.copytree(
        REPO,
        checkout,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "_build", "work", ".pytest_cache", ".hypothesis", "__pycache__"
        ),
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "qkv").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m qkv.cli "$@"\n')
    (bin_dir / "qkv").chmod(0o755)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    gitconfig = tmp_path / "gitconfig"  # the page's GitHub URL leads to a local bare repository
    gitconfig.write_text(
        f"[user]\n\tname = Instructor\n\temail = i@example.org\n"
        f'[url "{remote}"]\n\tinsteadOf = https://github.com/YOUR-NAME/qkv-student.git\n'
    )
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(checkout / "src"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    course = tmp_path / "course101"
    outputs = {}
    for name, commands in blocks.items():
        if name == "teaching-grade":  # a student's submission, as `nbgrader collect` leaves it
            (course / "submitted" / "alice" / "soft_lookup").mkdir(parents=True)
            shutil.copy(SOLUTION, course / "submitted" / "alice" / "soft_lookup" / "soft_lookup.ipynb")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", commands],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{name} failed:\n{commands}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        outputs[name] = done.stdout

    assert "released as labs/soft_lookup" in outputs["teaching-nbgrader"]
    rows = outputs["teaching-grade"].splitlines()  # grades.csv: a header, then alice with every autograded point
    assert len(rows) == 2 and rows[1].startswith("alice,10,10,graded"), rows
    assert outputs["teaching-grade-zh"].strip() == f"<h1>{translator('zh')(SUMMARY_TITLE, lab='soft_lookup')}</h1>"
    shown = subprocess.run(
        ["git", "--git-dir", str(remote), "show", "student:labs/soft_lookup/soft_lookup.ipynb"],
        capture_output=True,
        check=True,
    ).stdout
    assert shown == (REPO / "labs" / "soft_lookup" / "soft_lookup.ipynb").read_bytes()
    tree = subprocess.run(
        ["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "student"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert tree and not [p for p in tree if p.startswith(("solutions/", "src/", "tests/"))]
    assert re.search(r"^Container size: \d(\.\d)? CPU, [\d.]+ [GM]B: ", outputs["teaching-gradescope"], re.M), outputs[
        "teaching-gradescope"
    ]


def test_the_nbgitpuller_link_is_the_one_qkv_builds():
    links = re.findall(r"^https://YOUR-HUB/hub/user-redirect/git-pull\?\S+$", PAGE.read_text(), re.M)
    expected = nbgitpuller_link(
        "https://YOUR-HUB",
        "https://github.com/YOUR-NAME/qkv-student.git",
        "student",
        "labs/soft_lookup/soft_lookup.ipynb",
    )
    assert links == [expected]


def test_the_page_is_in_the_appendix():
    toc = (REPO / "_toc.yml").read_text()
    assert "- file: chapters/teaching" in toc[toc.index("caption: Appendix") :]
