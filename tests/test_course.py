"""The course in an instructor's hands: the student distribution (no solutions), the hub image's configuration
(nbgrader's student tools on, the instructor's off), and `qkv course init` into a real `nbgrader quickstart`
course, whose `nbgrader generate_assignment` then releases exactly labs/<lab> and whose autograde scores a
solution in full."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from lab_server import running_jupyterlab

from qkv.cli import main
from qkv.labs import lab_ids

REPO = Path(__file__).resolve().parent.parent
LABS = lab_ids(REPO)
LAB = "soft_lookup"
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # nbgrader runs `alembic` from PATH


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }


def test_student_dist_has_the_labs_and_no_solutions(tmp_path, capsys):
    dest = tmp_path / "student"
    assert main(["student-dist", str(dest), "--course", str(REPO)]) == 0
    files = _files(dest)
    for lab in LABS:
        assert files[f"labs/{lab}/{lab}.ipynb"] == (REPO / "labs" / lab / f"{lab}.ipynb").read_bytes()
        assert f"labs/{lab}/{lab}.ipynb" in files["README.md"].decode()
    assert {name.split("/")[0] for name in files} == {
        "labs",
        "chapters",
        "README.md",
        "requirements.txt",
        ".qkv-student-dist",
    }
    for name, data in files.items():
        for secret in (b"BEGIN SOLUTION", b"BEGIN HIDDEN TESTS", b"qkv.grading"):
            assert secret not in data, f"{name} holds {secret!r}"
    assert "chapters/teaching.md" not in files  # the instructors' page
    requirements = files["requirements.txt"].decode()
    assert "qkv @ git+https://" in requirements and "torch==" in requirements

    # Rewritten in place (its .git kept: it is the student branch's work tree); a folder of something else is refused.
    (dest / ".git").mkdir()
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/student\n")
    (dest / "labs" / "stale.txt").write_text("from an older distribution")
    assert main(["student-dist", str(dest), "--course", str(REPO)]) == 0
    assert not (dest / "labs" / "stale.txt").exists() and (dest / ".git" / "HEAD").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["student-dist", str(other), "--course", str(REPO)]) == 2
    assert "not empty" in capsys.readouterr().err and (other / "notes.txt").read_text() == "mine"


def test_student_dist_points_at_the_instructors_repository_and_pins_qkv(tmp_path, capsys):
    """The README's nbgitpuller link pulls the instructor's repository (--repo, else the folder's git remote
    origin); requirements.txt installs qkv at this checkout's commit (or the --qkv-ref given), never a branch."""
    from urllib.parse import parse_qs, urlsplit

    def link_of(dest: Path) -> tuple[str, dict]:
        line = next(w for w in (dest / "README.md").read_text().split() if "/git-pull?" in w)
        url = urlsplit(line.strip("(),."))
        return f"{url.scheme}://{url.netloc}{url.path}", parse_qs(url.query)

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert re.fullmatch(r"[0-9a-f]{40}\n", commit)
    dest = tmp_path / "a"
    argv = ["student-dist", str(dest), "--course", str(REPO), "--hub", "https://hub.example.edu"]
    assert main([*argv, "--repo", "https://git.example.edu/me/course.git"]) == 0
    where, query = link_of(dest)
    assert where == "https://hub.example.edu/hub/user-redirect/git-pull"
    assert query["repo"] == ["https://git.example.edu/me/course.git"] and query["branch"] == ["student"]
    assert query["urlpath"][0].startswith("lab/tree/course/labs/")
    (qkv_line,) = [x for x in (dest / "requirements.txt").read_text().splitlines() if x.startswith("qkv")]
    assert qkv_line.endswith(f"@{commit.strip()}") and "git+https://" in qkv_line, qkv_line

    other = tmp_path / "b"  # a folder that is already the student branch's clone: its origin is the default
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "remote", "add", "origin", "https://example.org/t/dist.git"], check=True)
    assert main(["student-dist", str(other), "--course", str(REPO), "--qkv-ref", "v9.9.9"]) == 0
    assert link_of(other)[1]["repo"] == ["https://example.org/t/dist.git"]
    assert (other / "requirements.txt").read_text().splitlines()[-1].endswith("@v9.9.9")

    # Run from anywhere but a qkv checkout, it says so (the page's order once left it in the nbgrader course).
    assert main(["student-dist", str(tmp_path / "c"), "--course", str(tmp_path)]) == 2
    assert "is not a qkv checkout" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_hub_requirements_are_the_lock_pins():
    lock = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REPO / "requirements.lock").read_text(), re.M))
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (REPO / "hub" / "requirements.txt").read_text(), re.M)
    assert pins and {name for name, _ in pins} >= {"torch", "jupyterlab", "nbgrader", "nbgitpuller"}
    for name, version in pins:
        assert name not in lock or lock[name] == version, (
            f"hub/requirements.txt pins {name}=={version}, the lock {lock[name]}"
        )
    dockerfile = (REPO / "hub" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?:--\S+ )*(.+) \S+$", dockerfile, re.M):
        for path in source.split():
            assert any(REPO.glob(path)), f"hub/Dockerfile copies {path}, which does not exist"
            assert not path.startswith("solutions"), "the students' image holds a solution"
    # `qkv check` grades with the package's specs and records (qkv/grading/specs/<lab>.py, .json): none removed.
    commands = "\n".join(line for line in dockerfile.splitlines() if not line.lstrip().startswith("#"))
    assert (
        "grading/specs" not in commands
        and "-delete" not in commands
        and "rm " not in commands.replace("rm -rf /tmp/qkv", "")
    )
    assert (
        "JUPYTER_CONFIG_PATH=/etc/jupyter/qkv-student" in dockerfile
        and "COPY hub/jupyter /etc/jupyter/qkv-student" in dockerfile
    )


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""
    except OSError:  # not listening yet
        return 0, ""


def test_hub_configuration_has_student_tools_only(tmp_path):
    """JupyterLab started with the image's configuration (hub/jupyter): validate and the assignment list answer,
    formgrader and the course list do not exist, and the instructor's lab plugins are disabled and locked."""
    env = {
        **ENV,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_CONFIG_PATH": str(REPO / "hub" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
    }
    with running_jupyterlab(tmp_path, env, tmp_path / "lab.log") as (url, token):
        base = url.rstrip("/")
        assert _get(f"{base}/formgrader?token={token}")[0] == 404
        assert _get(f"{base}/formgraders?token={token}")[0] == 404  # the course list
        assert (
            _get(f"{base}/nbgrader_version?version=0.9.6&token={token}")[0] == 200
        )  # nbgrader's student side is there
        assert _get(f"{base}/assignments?course_id=c&token={token}")[0] != 404
        status, page = _get(f"{base}/lab?token={token}")
        config = json.loads(
            re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S).group(1)
        )
        off = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:course-list"}
        assert (
            status == 200
            and off <= set(config["disabledExtensions"])
            and off <= set(config.get("lockedExtensions", {}))
        )
        assert not {"@jupyter/nbgrader:validate-assignment", "@jupyter/nbgrader:assignment-list"} & set(
            config["disabledExtensions"]
        )


def _run(cmd: list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600)
    assert (done.returncode == 0) == ok, f"{cmd}: {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def _qkv(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "qkv.cli", *args, "--course", str(REPO)], REPO, ok)


def test_course_init_into_an_nbgrader_quickstart_course(tmp_path):
    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "quickstart", "course101"], tmp_path)
    course = tmp_path / "course101"
    config = course / "nbgrader_config.py"
    original = config.read_text()
    assert 'c.IncludeHeaderFooter.header = "source/header.ipynb"' in original  # what made releases differ

    # Not interactive, no --yes: the lab is copied (nothing was there), the course's settings are not touched.
    done = _qkv("course", "init", str(course), LAB, ok=False)
    assert "IncludeHeaderFooter.header = ''" in done.stderr and config.read_text() == original
    assert (course / "source" / LAB / f"{LAB}.ipynb").read_bytes() == (
        REPO / "solutions" / LAB / f"{LAB}.ipynb"
    ).read_bytes()
    _run([*nbgrader, "generate_assignment", LAB], course)
    release = course / "release" / LAB / f"{LAB}.ipynb"
    assert release.read_bytes() != (REPO / "labs" / LAB / f"{LAB}.ipynb").read_bytes()  # the header's cells

    _qkv("course", "init", str(course), LAB, "--yes")
    _qkv("course", "init", str(course), LAB, "--yes")  # again: one block, unchanged
    text = config.read_text()
    assert text.startswith(original.rstrip("\n")) and text.count("# >>> qkv labs") == 1
    _run([*nbgrader, "generate_assignment", LAB, "--force"], course)
    assert release.read_bytes() == (REPO / "labs" / LAB / f"{LAB}.ipynb").read_bytes()

    # A source the instructor changed is never replaced without --yes.
    changed = course / "source" / LAB / f"{LAB}.ipynb"
    nb = json.loads(changed.read_text())
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "ours", "metadata": {}, "source": "Our course's note."})
    changed.write_text(json.dumps(nb))
    mine = changed.read_bytes()
    done = _qkv("course", "init", str(course), LAB, ok=False)
    assert "left as they were" in done.stderr and changed.read_bytes() == mine
    assert config.read_text() == text and "not written" not in done.stderr  # the settings given before stay

    # nbgrader's own autograde in that course gives a solution every autograded point.
    changed.write_bytes((REPO / "solutions" / LAB / f"{LAB}.ipynb").read_bytes())
    submitted = course / "submitted" / "alice" / LAB
    submitted.mkdir(parents=True)
    (submitted / f"{LAB}.ipynb").write_bytes((REPO / "solutions" / LAB / f"{LAB}.ipynb").read_bytes())
    _run([*nbgrader, "autograde", LAB, "--create"], course)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        sub = gb.find_submission(LAB, "alice")
        assert sub.max_code_score > 0 and sub.code_score == sub.max_code_score


def test_course_init_needs_an_nbgrader_course(tmp_path):
    done = _qkv("course", "init", str(tmp_path), ok=False)
    assert "not an nbgrader course (no nbgrader_config.py)" in done.stderr and "nbgrader quickstart" in done.stderr


def test_nbgrader_folders_at_the_root_are_ignored_by_git():
    generated = [
        "gradebook.db",
        ".nbgrader.log",
        "submitted/alice/soft_lookup/soft_lookup.ipynb",
        "autograded/alice/x",
        "feedback/alice/x.html",
        "release/soft_lookup/soft_lookup.ipynb",
        "source/soft_lookup/soft_lookup.ipynb",
    ]
    kept = ["labs/soft_lookup/soft_lookup.ipynb", "solutions/soft_lookup/soft_lookup.ipynb", "src/qkv/course.py"]
    for path in generated + kept:
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO).returncode == 0
        assert ignored == (path in generated), path


def test_qkv_grades_reach_nbgraders_gradebook_and_export(tmp_path):
    """`qkv grade --gradebook`: the autograded points land in nbgrader's gradebook (nbgrader's API), a written
    answer's points entered there by hand (as formgrader does) add to them, and `nbgrader export` shows the sum."""
    import csv

    from nbgrader.api import Gradebook

    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "quickstart", "course101"], tmp_path)
    course = tmp_path / "course101"
    _qkv("course", "init", str(course), LAB, "--yes")
    _run([*nbgrader, "generate_assignment", LAB], course)  # records the assignment and its graded cells
    solution = json.loads((REPO / "solutions" / LAB / f"{LAB}.ipynb").read_text())
    meta = [(c["cell_type"], c["metadata"].get("nbgrader", {})) for c in solution["cells"]]
    auto = sum(m.get("points", 0) for kind, m in meta if kind == "code" and m.get("grade"))
    written = [m["grade_id"] for kind, m in meta if kind == "markdown" and m.get("grade")]
    assert auto > 0 and written
    for student, notebook in (("alice", REPO / "solutions"), ("bob", REPO / "labs")):
        folder = course / "submitted" / student / LAB
        folder.mkdir(parents=True)
        (folder / f"{LAB}.ipynb").write_bytes((notebook / LAB / f"{LAB}.ipynb").read_bytes())
    db = f"sqlite:///{course / 'gradebook.db'}"
    grade = ["grade", LAB, str(course / "submitted"), "--out", str(course / "grades"), "--quiet", "--no-sandbox"]
    _qkv(*grade, "--gradebook", db, "--jobs", "1")
    with Gradebook(db) as gb:  # the instructor grades alice's first written answer: 1 point
        g = gb.find_grade(written[0], LAB, LAB, "alice")
        assert g.auto_score is None and g.manual_score is None  # a written answer is nbgrader's to grade
        g.manual_score = 1.0
        gb.db.commit()
        assert gb.find_submission(LAB, "alice").code_score == auto
        assert gb.find_submission(LAB, "bob").code_score == 0
    _run([*nbgrader, "export"], course)
    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}
    assert float(rows["alice"]["raw_score"]) == auto + 1 and float(rows["bob"]["raw_score"]) == 0
    assert rows["alice"]["assignment"] == LAB

    # Graded again (its results cached), the hand-graded point stays.
    _qkv(*grade, "--gradebook", db, "--jobs", "1")
    _run([*nbgrader, "export", "--to", str(tmp_path / "again.csv")], course)
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "again.csv").open())}
    assert float(rows["alice"]["raw_score"]) == auto + 1
    done = _qkv(*grade, "--gradebook", db, "--assignment", "ps9", ok=False)
    assert "no notebook soft_lookup in an assignment 'ps9'" in done.stderr
