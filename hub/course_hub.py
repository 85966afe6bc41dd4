"""The local JupyterHub course (`make hub-demo`, tests/hub/): its users, folders and settings, in one place.

`python hub/course_hub.py setup STATE` (as root) makes a course ready to serve from the folder STATE:

- real local users, created with ``useradd``: an instructor and three students (``qkv-instructor``,
  ``qkv-student1``..``3``), each with a fresh home (mode 0700) under ``--home-root`` and a new random password
  set with ``chpasswd`` (written to ``STATE/users.json``, readable by root only); a student's home has the
  course's shape: ``labs/`` (where nbgrader fetches, hub/jupyter/nbgrader_config.py) beside ``chapters/``;
- nbgrader's exchange ``STATE/exchange`` (mode 0777, as nbgrader's documentation for a shared server says);
- the course's nbgrader settings as the teaching page gives them: ``STATE/course/nbgrader_config.py`` (course id,
  exchange; every user reads it) and ``STATE/instructor/nbgrader_config.py`` (the course's folder);
- the instructor's course, made as the instructor: ``nbgrader quickstart course101``, then ``qkv course init
  course101 LAB --yes`` (the page's commands);
- ``STATE/python``: the users' Python, a venv that every user can run, made from a Python every user can run
  (the project venv's own base interpreter, or else ``/usr/bin/python3.X`` of the same version: the venv's may
  live in root's home) and layered on the project's venv (``.venv``: JupyterLab, nbgrader, torch, qkv), whose
  packages it reuses through a ``.pth`` file, plus the hub's own ``jupyterhub`` package (a link into
  ``.venv-hub``), so that ``jupyterhub-singleuser`` runs at exactly the hub's version; ``qkv``, ``nbgrader`` and
  ``jupyter`` commands in its ``bin/``.

`hub/jupyterhub_config.py` reads the same folder. Every user must be able to read the project's venv and the
repository's ``src/`` (setup checks it by running Python as a student).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HUB_VENV = REPO / ".venv-hub"
# The course's packages: the project's venv (resolved: .venv may be a symlink to a shared one).
PROJECT_VENV = (REPO / ".venv").resolve()
COMMANDS = {"qkv": "qkv.cli", "nbgrader": "nbgrader", "jupyter": "jupyter_core.command"}
COURSE_ID = "course101"
INSTRUCTOR = "qkv-instructor"
STUDENTS = ("qkv-student1", "qkv-student2", "qkv-student3")
LABS = ("soft_lookup",)
# JupyterLab settings for every user: no news pop-up, and every cell of a notebook kept in the page.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def role(name: str) -> str:
    return "instructor" if name == INSTRUCTOR else "student"


def environment(state: Path, name: str) -> dict[str, str]:
    """What a user's server, kernels and terminals see: the course's Python first on PATH, this checkout's qkv, the
    hub's jupyterhub package, and the nbgrader settings of the user's role (students also get the student-only
    JupyterLab configuration of the hub image, hub/jupyter)."""
    config = [state / "course", PROJECT_VENV / "etc" / "jupyter"]  # the venv's own: JupyterLab's and nbgrader's
    config.insert(0, state / "instructor" if role(name) == "instructor" else REPO / "hub" / "jupyter")
    return {
        "PATH": f"{state / 'python' / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(REPO / "src"),
        "JUPYTER_CONFIG_PATH": ":".join(map(str, config)),
        "JUPYTER_PATH": str(PROJECT_VENV / "share" / "jupyter"),  # the lab extensions, nbgrader's among them
        "OMP_NUM_THREADS": "1",
        "LOGNAME": name,
        "USER": name,
    }


def as_user(name: str, state: Path, command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `command` as the user `name` (runuser), with the user's course environment, in `cwd`."""
    home = pwd.getpwnam(name).pw_dir
    env = {**environment(state, name), "HOME": home, "SHELL": "/bin/bash", "LANG": "C.UTF-8"}
    full = ["runuser", "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command]
    return subprocess.run(full, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _run(command: list[str], **kwargs) -> None:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode:
        sys.exit(f"{' '.join(command[:3])}... failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def _fresh_home(name: str, home: Path) -> None:
    """The user's home, new and empty but for /etc/skel and the course's JupyterLab settings, mode 0700."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        _run(["useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/bin/bash", "--user-group", name])
        entry = pwd.getpwnam(name)
    else:
        if Path(entry.pw_dir) != home:
            _run(["usermod", "--home", str(home), name])
    if home.exists():
        shutil.rmtree(home)
    shutil.copytree("/etc/skel", home, symlinks=True)
    settings = home / ".jupyter" / "lab" / "user-settings"
    for file, content in LAB_SETTINGS.items():
        (settings / file).parent.mkdir(parents=True, exist_ok=True)
        (settings / file).write_text(json.dumps(content), encoding="utf-8")
    if role(name) == "student":  # the course's shape: fetched labs in ~/labs (hub/jupyter), the chapters beside
        from qkv.course import copy_chapters

        (home / "labs").mkdir()
        copy_chapters(REPO, home / "chapters")
    for path in [home, *home.rglob("*")]:
        os.lchown(path, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)


def _world_runnable(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents]) and bool(path.stat().st_mode & 0o004)


def users_python(state: Path) -> Path:
    """STATE/python (see the module's docstring); returns its interpreter."""
    cfg = dict(line.split(" = ", 1) for line in (PROJECT_VENV / "pyvenv.cfg").read_text().splitlines() if " = " in line)
    minor = ".".join(cfg["version"].split(".")[:2])
    candidates = [Path(cfg["home"]) / f"python{minor}", Path(f"/usr/bin/python{minor}")]
    base = next((p.resolve() for p in candidates if p.exists() and _world_runnable(p.resolve())), None)
    if base is None:
        sys.exit(f"no Python {minor} that every user can run: {', '.join(map(str, candidates))}")
    venv = state / "python"
    if venv.exists():
        shutil.rmtree(venv)
    _run([str(base), "-m", "venv", "--without-pip", str(venv)])
    (site,) = venv.glob("lib/python3*/site-packages")
    (project,) = PROJECT_VENV.glob("lib/python3*/site-packages")
    (site / "qkv-course.pth").write_text(f"import site; site.addsitedir({str(project)!r})\n", encoding="utf-8")
    (site / "jupyterhub").symlink_to(next(HUB_VENV.glob("lib/python3*/site-packages/jupyterhub")))
    for name, module in COMMANDS.items():
        script = venv / "bin" / name
        script.write_text(
            f"#!{venv / 'bin' / 'python'}\nimport runpy\nrunpy.run_module({module!r}, run_name='__main__')\n"
        )
        script.chmod(0o755)
    for path in [venv, *venv.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o005 if path.is_dir() else path.stat().st_mode | 0o004)
    return venv / "bin" / "python"


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o755)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def setup(state: Path, home_root: Path) -> dict[str, str]:
    """Make the course in `state` (see the module's docstring); returns {user: password}."""
    if os.geteuid() != 0:
        sys.exit("the course hub needs root: it creates users (useradd) and runs their servers as them")
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o755)
    home_root.mkdir(parents=True, exist_ok=True)
    passwords = {name: secrets.token_urlsafe(12) for name in (INSTRUCTOR, *STUDENTS)}
    for name in passwords:
        _fresh_home(name, home_root / name)
    _run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in passwords.items()))
    _write(state / "users.json", json.dumps(passwords, indent=1), mode=0o600)
    exchange = state / "exchange"
    if exchange.exists():
        shutil.rmtree(exchange)
    exchange.mkdir()
    exchange.chmod(0o777)
    _write(
        state / "course" / "nbgrader_config.py",
        f'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "{COURSE_ID}"\nc.Exchange.root = "{exchange}"\n'
        "c.Execute.startup_timeout = 300  # Validate's kernel on a busy shared machine\n",
    )
    instructor_home = home_root / INSTRUCTOR
    _write(
        state / "instructor" / "nbgrader_config.py",
        f'c = get_config()  # noqa: F821\nc.CourseDirectory.root = "{instructor_home / COURSE_ID}"\n',
    )
    python = users_python(state)
    probe = "import jupyterlab, nbgrader, qkv, jupyterhub.singleuser; print(qkv.__file__)"
    done = as_user(STUDENTS[0], state, ["python", "-c", probe], cwd=home_root / STUDENTS[0])
    if done.returncode:
        sys.exit(f"a student cannot run the course's Python ({python}, {REPO / 'src'}): {done.stderr}")
    for command in (["nbgrader", "quickstart", COURSE_ID], ["qkv", "course", "init", COURSE_ID, *LABS, "--yes"]):
        if command[0] == "qkv":
            command += ["--course", str(REPO)]
        done = as_user(INSTRUCTOR, state, command, cwd=instructor_home)
        if done.returncode:
            sys.exit(f"{' '.join(command)} failed as {INSTRUCTOR}:\n{done.stdout}{done.stderr}")
    return passwords


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("setup", help="users, homes, exchange, settings and the instructor's course (as root)")
    p.add_argument("state", type=Path, help="the course hub's folder (settings, exchange, the hub's database)")
    p.add_argument("--home-root", type=Path, default=Path("/home"), help="where the users' homes go (default /home)")
    args = parser.parse_args(argv)
    passwords = setup(args.state.resolve(), args.home_root.resolve())
    print(f"course {COURSE_ID}: {', '.join(passwords)}; their passwords are in {args.state / 'users.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
