"""The instructors' page, chapters/teaching.md, cannot go stale: every code block marked ``:class: tested`` runs
here, as written, as the page says: the instructor's blocks in order in one shell, started in an empty folder,
and the students' blocks in each student's own session, as two real users of the machine (created with
``useradd`` when the test runs as root, as on CI). The results are then checked (the nbgrader release equals
labs/, the students' submissions reach the grader through nbgrader's exchange, the student branch reaches its
remote without solutions, the Gradescope README names a container). The page's nbgitpuller link is the one
``qkv`` builds.

What the test provides instead of the page: ``qkv`` on the PATH (the cloned checkout's ``src``, run by this
Python, with nbgrader installed); GitHub (git's ``insteadOf`` leads the page's URLs to local repositories); the
system folders ``/srv/nbgrader`` and ``/etc/jupyter``, which the blocks use under a temporary root (with
``JUPYTER_CONFIG_PATH`` naming that root's ``etc/jupyter`` for everyone), so that a test never writes the
machine's own configuration; and each student's work (alice's notebook becomes the solution, bob hands in the
blank lab)."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from qkv.course import nbgitpuller_link
from qkv.grading.messages import SUMMARY_TITLE, translator

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "chapters" / "teaching.md"
BLOCK = re.compile(r"^```\{code-block\} bash\n((?::\w+:[^\n]*\n)+)(.*?)^```$", re.M | re.S)
SOLUTION = REPO / "solutions" / "soft_lookup" / "soft_lookup.ipynb"
STUDENT_BLOCKS = ("teaching-student-fetch", "teaching-student-submit")
NOT_SOURCE = (".git", ".venv", "node_modules", "_build", "work", ".pytest_cache", ".hypothesis", "__pycache__")


def _tested_blocks() -> dict[str, str]:
    """The page's tested blocks, in order: {name: commands}."""
    blocks = {}
    for options, body in BLOCK.findall(PAGE.read_text()):
        opts = dict(re.findall(r"^:(\w+): *(.*)$", options, re.M))
        if opts.get("class") == "tested":
            blocks[opts["name"]] = body
    return blocks


def _points(kind: str) -> float:
    """The solution's points of graded ``kind`` cells (code: autograded, markdown: by hand), from nbgrader's
    metadata."""
    cells = json.loads(SOLUTION.read_text())["cells"]
    meta = [c["metadata"].get("nbgrader", {}) for c in cells if c["cell_type"] == kind]
    return sum(m.get("points", 0) for m in meta if m.get("grade"))


class Shell:
    """One bash reading the instructor's blocks from its stdin, as typed: ``cd`` and variables carry over, and
    the first failing command ends it (``set -euo pipefail``)."""

    def __init__(self, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.log = log  # the shell's stderr: nbgrader's log lines, and what a failing command said
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
        )
        self.proc.stdin.write("set -euo pipefail\n")

    def run(self, name: str, commands: str, timeout: float = 900) -> str:
        marker = f"__end_of_{name}__"
        self.proc.stdin.write(f"{commands}\necho {marker}\n")
        self.proc.stdin.flush()
        watchdog = threading.Timer(timeout, self.proc.kill)
        watchdog.start()
        lines = []
        try:
            for line in self.proc.stdout:
                if line.rstrip("\n") == marker:
                    return "".join(lines)
                lines.append(line)
        finally:
            watchdog.cancel()
        status, said = self.proc.wait(), self.log.read_text()[-3000:]
        raise AssertionError(f"{name} failed ({status}):\n{commands}\n{''.join(lines)[-2000:]}\n{said}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


class Students:
    """Two students, real users of the machine (created with ``useradd``: the test runs as root, as CI does), each
    block in a new shell of theirs, in their home. Where this Python lies under a folder only root may enter
    (pyenv in ``/root``), their shells see that one Python through bubblewrap (``/root`` an empty tmpfs but for
    it), and nothing else of root's."""

    def __init__(self, env: dict[str, str]) -> None:
        assert os.geteuid() == 0, "the page's exchange needs two users of the machine: run this test as root (as CI)"
        self.names = [f"{n}{os.getpid()}" for n in ("alice", "bob")]  # unique: tests may run side by side
        self.env, self.homes, self.wrap = env, {}, []
        for name in self.names:
            subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True, capture_output=True)
            self.homes[name] = Path(pwd.getpwnam(name).pw_dir)
        try:
            if self._run_as(self.names[0], [sys.executable, "-c", "pass"]).returncode != 0:
                base = Path(sys.base_prefix).resolve()
                private = next(p for p in reversed(base.parents) if not p.stat().st_mode & 0o001)
                shown = private / base.relative_to(private).parts[0]  # /root/.pyenv of /root
                self.wrap = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", str(private)]
                self.wrap += ["--ro-bind", str(shown), str(shown), "--cap-add", "ALL"]  # ALL: for runuser inside
            reach = self._run_as(self.names[0], [sys.executable, "-c", "pass"])
            assert reach.returncode == 0, f"the students cannot run {sys.executable}: {reach.stderr}"
        except BaseException:
            self.remove()
            raise

    def _run_as(self, name: str, cmd: list[str], **env: str) -> subprocess.CompletedProcess:
        full = ["runuser", "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd]
        return subprocess.run([*self.wrap, *full], cwd="/", capture_output=True, text=True, timeout=900)

    def run(self, name: str, block: str, commands: str) -> str:
        env = {**self.env, "HOME": str(self.homes[name]), "USER": name, "LOGNAME": name}
        done = self._run_as(name, ["bash", "--noprofile", "--norc", "-c", f"set -euo pipefail\n{commands}"], **env)
        assert done.returncode == 0, (
            f"{block} as {name} failed:\n{commands}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    def work(self, name: str, notebook: Path) -> None:
        """The student's own work: their fetched lab replaced by ``notebook``, owned by them."""
        path = self.homes[name] / "soft_lookup" / "soft_lookup.ipynb"
        assert path.is_file(), f"{name} has no fetched lab at {path}"
        shutil.copy(notebook, path)
        shutil.chown(path, name, name)

    def remove(self) -> None:
        for name in self.homes:
            subprocess.run(["userdel", "-r", name], capture_output=True)


def _session_root() -> Path:
    """A folder every student may traverse (pytest's own temporary folders are private to their owner)."""
    root = Path(tempfile.mkdtemp(prefix="qkv-teaching-"))
    root.chmod(0o755)
    return root


def test_every_tested_block_runs():
    blocks = _tested_blocks()
    assert list(blocks) == [
        "teaching-nbgrader",
        "teaching-exchange",
        "teaching-student-fetch",
        "teaching-student-submit",
        "teaching-grade",
        "teaching-export",
        "teaching-grade-zh",
        "teaching-student-dist",
        "teaching-gradescope",
    ]
    root = _session_root()
    students = None
    try:
        # GitHub: the page's clone comes from a snapshot of this working tree, its push goes to a bare repository
        source = root / "github" / "qkv"
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
        remote = root / "github" / "qkv-student.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        gitconfig = root / "gitconfig"
        gitconfig.write_text(
            f"[user]\n\tname = Instructor\n\temail = i@example.org\n"
            f'[url "{source}"]\n\tinsteadOf = https://github.com/qkv-course/qkv.git\n'
            f'[url "{remote}"]\n\tinsteadOf = https://github.com/YOUR-NAME/qkv-student.git\n'
        )
        git = {"GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1"}
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the course"]):
            subprocess.run(["git", *args], cwd=source, env={**os.environ, **git}, check=True)

        bin_dir, home = root / "bin", root / "instructor"
        bin_dir.mkdir()
        home.mkdir()  # the empty folder the instructor starts in
        (bin_dir / "qkv").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m qkv.cli "$@"\n')
        (bin_dir / "qkv").chmod(0o755)
        system = root / "system"  # /srv/nbgrader and /etc/jupyter of the page
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_CONFIG_DIR")},
            **git,
            "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(home / "qkv" / "src"),  # qkv from the checkout the page clones
            "JUPYTER_CONFIG_PATH": str(system / "etc" / "jupyter"),
            "MPLBACKEND": "Agg",
        }

        def on_this_machine(commands: str) -> str:
            return commands.replace("/srv/nbgrader", f"{system}/srv/nbgrader").replace(
                "/etc/jupyter", f"{system}/etc/jupyter"
            )

        students = Students({**env, "GIT_CONFIG_GLOBAL": "/dev/null"})
        shell = Shell(home, env, root / "instructor.log")
        outputs, checked = {}, {}
        for name, commands in blocks.items():
            if name not in STUDENT_BLOCKS:
                outputs[name] = shell.run(name, on_this_machine(commands))
                continue
            for student in students.names:
                if name == "teaching-student-submit":  # alice finished the lab; bob hands in the blank one
                    students.work(student, SOLUTION if student.startswith("alice") else root / "blank.ipynb")
                out = students.run(student, name, on_this_machine(commands))
                checked[student] = out
            if name == "teaching-student-fetch":
                shutil.copy(
                    students.homes[students.names[1]] / "soft_lookup" / "soft_lookup.ipynb", root / "blank.ipynb"
                )
        shell.close()

        alice, bob = students.names
        assert "released as labs/soft_lookup" in outputs["teaching-nbgrader"]
        auto, manual = _points("code"), _points("markdown")
        assert auto > 0 and manual > 0
        assert f"total: {auto:g} / {auto:g} autograded points" in checked[alice], checked[alice]
        assert f"(plus {manual:g} points for written answers, graded by hand)" in checked[alice], checked[alice]
        assert f"total: 0 / {auto:g} autograded points" in checked[bob], checked[bob]
        rows = outputs["teaching-grade"].splitlines()  # grades.csv: a header, then alice and bob
        assert len(rows) == 3 and rows[0].startswith("student,total,max_total,status"), rows
        assert rows[1].startswith(f"{alice},{auto:g},{auto:g},graded"), rows
        assert rows[2].startswith(f"{bob},0,{auto:g},graded"), rows
        export = outputs["teaching-export"].splitlines()  # nbgrader's own export: qkv's points in its gradebook
        assert export[0] == "assignment,student_id,raw_score", export
        assert sorted(export[1:]) == [f"soft_lookup,{alice},{auto:g}.0", f"soft_lookup,{bob},0.0"], export
        zh_title = translator("zh")(SUMMARY_TITLE, lab="soft_lookup")
        assert outputs["teaching-grade-zh"].strip() == f"<h1>{zh_title}</h1>"
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
        readme = subprocess.run(
            ["git", "--git-dir", str(remote), "show", "student:README.md"], capture_output=True, text=True, check=True
        ).stdout
        assert "repo=https%3A%2F%2Fgithub.com%2FYOUR-NAME%2Fqkv-student.git" in readme, readme
        gradescope = outputs["teaching-gradescope"]
        assert re.search(r"^Container size: \d(\.\d)? CPU, [\d.]+ [GM]B: ", gradescope, re.M), gradescope
    finally:
        if students is not None:
            students.remove()
        shutil.rmtree(root, ignore_errors=True)


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
