"""The course in an instructor's hands: a student distribution, and the labs in an existing nbgrader course.

``student_dist(course, dest)`` writes what students may see, as a folder ready to push as a branch for
nbgitpuller: the labs, the chapters, a README and a requirements file. No solutions, no grader or specs, no
tests (``qkv student-dist DIR``).

``course_init(course, target)`` adds the labs to an existing nbgrader course (``qkv course init DIR``): it
copies ``solutions/<lab>`` into the course's source folder and writes, in a marked block of the course's
``nbgrader_config.py``, the settings under which ``nbgrader generate_assignment`` releases exactly
``labs/<lab>`` (those of this repository's ``nbgrader_config.py``, and no header notebook). It never replaces a
file or a setting of the instructor's without asking (``ask``), or without ``yes=True``.
"""

from __future__ import annotations

import filecmp
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .labs import CHAPTERS, RELEASE, SOURCE, lab_ids

__all__ = ["Init", "copy_chapters", "course_init", "nbgitpuller_link", "qkv_pin", "qkv_root", "student_dist"]

MARKER = ".qkv-student-dist"  # a folder written by student_dist holds this file (and may be rewritten)
DIST_README = """# qkv: the labs

Self-attention from first principles: one lab per topic, and the book's chapters to read first. Your
instructor's JupyterHub pulls this folder into your home (with nbgitpuller, e.g. {link}); pulling again
brings new labs and fixes without touching the notebooks you have changed. The labs, in the book's order:

{labs}

Work in the lab's notebook; each exercise is followed by a self-check cell (the grader runs more tests than
you see). "Validate" in JupyterLab's toolbar runs every cell and says whether the notebook passes its checks.
The chapters (`chapters/`) are the book's pages (the book: {url}).

On your own machine: `pip install -r requirements.txt`, then `jupyter lab`.
"""
BEGIN, END = "# >>> qkv labs (written by `qkv course init`) >>>", "# <<< qkv labs <<<"


STUDENT_SKIP = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "teaching.md", "_build")


def copy_chapters(course: Path, dest: Path) -> None:
    """The book's chapters for students (without the instructors' page) into ``dest``, which a student's copy of the
    course keeps beside ``labs/``: the English labs' "Read first" links (``../../chapters/<name>.ipynb``) open them."""
    shutil.copytree(Path(course) / CHAPTERS, dest, ignore=STUDENT_SKIP, dirs_exist_ok=True)


def _repository(course: Path) -> tuple[str, str]:
    """``repository.url`` and ``repository.branch`` from the book's ``_config.yml`` (the one place a fork changes)."""
    import yaml

    repo = yaml.safe_load((Path(course) / "_config.yml").read_text()).get("repository", {})
    return repo["url"], repo.get("branch", "main")


def nbgitpuller_link(hub: str, repo: str, branch: str, path: str) -> str:
    """The link that pulls ``branch`` of ``repo`` into a student's home on ``hub`` and opens ``path`` in JupyterLab."""
    from urllib.parse import quote, urlencode

    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    query = urlencode({"repo": repo, "branch": branch, "urlpath": f"lab/tree/{folder}/{path}"}, quote_via=quote)
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def qkv_root(course: Path) -> Path:
    """``course`` when it is a checkout of qkv (it has ``solutions/`` and ``labs/``); else a clear error."""
    course = Path(course)
    if not (course / SOURCE).is_dir() or not (course / RELEASE).is_dir():
        raise FileNotFoundError(
            f"{course.resolve()} is not a qkv checkout (no {SOURCE}/ and {RELEASE}/ in it): run this from the "
            f"checkout, or give its folder with --course"
        )
    return course


def _git(folder: Path, *args: str) -> str:
    """The output of ``git -C folder args`` ("" where ``folder`` is no git work tree or git fails)."""
    import subprocess

    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def qkv_pin(course: Path, ref: str | None = None) -> str:
    """The requirement that installs this course's ``qkv``: ``repository.url`` of ``_config.yml`` at ``ref``, by
    default the checkout's commit (its ``v<version>`` tag outside git); never a moving branch."""
    from . import __version__

    url, _ = _repository(course)
    ref = ref or _git(course, "rev-parse", "HEAD") or f"v{__version__}"
    return f"qkv @ git+{url.rstrip('/')}@{ref}"


def student_dist(
    course: Path,
    dest: Path,
    *,
    branch: str = "student",
    repo: str | None = None,
    hub: str = "https://YOUR-HUB",
    qkv_ref: str | None = None,
) -> list[Path]:
    """Write the student distribution into ``dest`` (empty, or written here before; a ``.git`` in it is kept).

    Holds ``labs/`` (as generated), ``chapters/`` (the book's pages, without the instructors' page),
    ``README.md`` and ``requirements.txt`` (``hub/requirements.txt`` and ``qkv`` pinned by :func:`qkv_pin`).
    The README's nbgitpuller link pulls ``branch`` of ``repo``, where the distribution is pushed: by default the
    ``origin`` remote of ``dest``'s git, and only without one ``_config.yml``'s ``repository.url``.
    Returns the files written.
    """
    course, dest = qkv_root(course), Path(dest)
    if dest.exists() and not (dest / MARKER).exists() and any(p.name != ".git" for p in dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty and was not written by `qkv student-dist`; choose an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.iterdir():  # a previous distribution: rewritten from scratch, its git history kept
        if p.name != ".git":
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    shutil.copytree(course / RELEASE, dest / RELEASE, ignore=STUDENT_SKIP)
    copy_chapters(course, dest / CHAPTERS)
    url, _ = _repository(course)
    repo = repo or (_git(dest, "remote", "get-url", "origin") if (dest / ".git").exists() else "") or url
    toc = re.findall(r"labs/(\w+)/\1\b", (course / "_toc.yml").read_text())  # the book's order of the labs
    labs = sorted(lab_ids(course), key=lambda lab: (toc.index(lab) if lab in toc else len(toc), lab))
    (dest / "README.md").write_text(
        DIST_README.format(
            labs="\n".join(f"- `labs/{lab}/{lab}.ipynb`" for lab in labs),
            url=url,
            branch=branch,
            link=nbgitpuller_link(hub, repo, branch, f"labs/{labs[0]}/{labs[0]}.ipynb"),
        )
    )
    pins = (course / "hub" / "requirements.txt").read_text()
    (dest / "requirements.txt").write_text(f"{pins.rstrip()}\n{qkv_pin(course, qkv_ref)}\n")
    (dest / MARKER).write_text("written by `qkv student-dist`; rewritten by it (keeping .git)\n")
    return sorted(p for p in dest.rglob("*") if p.is_file() and ".git" not in p.relative_to(dest).parts)


@dataclass
class Init:
    """What ``course_init`` did, and what it left for the instructor to decide."""

    copied: list[str] = field(default_factory=list)  # labs copied into the course's source folder
    current: list[str] = field(default_factory=list)  # labs already there, identical
    kept: list[str] = field(default_factory=list)  # labs there and different, left as they were
    settings: list[str] = field(default_factory=list)  # config lines written
    declined: list[str] = field(default_factory=list)  # config lines needed but not written


def _load_config(text: str, path: Path):
    """Run an ``nbgrader_config.py``'s text the way nbgrader does; returns its traitlets ``Config``."""
    from traitlets.config import Config

    c = Config()
    exec(compile(text, str(path), "exec"), {"get_config": lambda: c, "c": c, "__file__": str(path)})
    return c


def _effective(config, section: str, name: str):
    """The value nbgrader would use: set in ``config``, else the default of nbgrader's class ``section``."""
    if section in config and name in config[section]:
        return config[section][name]
    from nbgrader import preprocessors
    from nbgrader.coursedir import CourseDirectory

    cls = CourseDirectory if section == "CourseDirectory" else getattr(preprocessors, section)
    return cls.class_traits()[name].default()


def _needed(course: Path) -> dict[tuple[str, str], object]:
    """The settings under which nbgrader releases exactly ``labs/``: this repository's, less its folders."""
    ours = _load_config((course / "nbgrader_config.py").read_text(), course / "nbgrader_config.py")
    needed = {(s, n): v for s in ours for n, v in ours[s].items() if s != "CourseDirectory"}
    needed[("IncludeHeaderFooter", "header")] = ""  # labs/ has no header (nbgrader quickstart's course adds one)
    needed[("IncludeHeaderFooter", "footer")] = ""
    return needed


def _ask_never(question: str) -> bool:
    return False


def course_init(
    course: Path,
    target: Path,
    labs: list[str] | None = None,
    *,
    yes: bool = False,
    ask: Callable[[str], bool] = _ask_never,
) -> Init:
    """Add ``labs`` (default: every lab) of ``course`` to the existing nbgrader course at ``target``."""
    course, target = qkv_root(course), Path(target)
    config_file = target / "nbgrader_config.py"
    if not config_file.is_file():
        raise FileNotFoundError(
            f"{target} is not an nbgrader course (no nbgrader_config.py); "
            f"create one with `nbgrader quickstart NAME`, or point at the course's root"
        )
    known = lab_ids(course)
    unknown = sorted(set(labs or []) - set(known))
    if unknown:
        raise ValueError(f"unknown lab(s) {', '.join(unknown)}; the labs are: {', '.join(known)}")
    text = config_file.read_text()
    block = re.compile(rf"\n*{re.escape(BEGIN)}\n.*?{re.escape(END)}\n?", re.S)
    theirs_text = block.sub("\n", text)
    theirs = _load_config(theirs_text, config_file)
    done = Init()

    source = target / _effective(theirs, "CourseDirectory", "source_directory")
    for lab in labs or known:
        src, dst = course / SOURCE / lab, source / lab
        if dst.exists() and not _same_tree(src, dst):
            if not (yes or ask(f"{dst} exists and differs from the qkv solution of {lab}. Replace it?")):
                done.kept.append(lab)
                continue
            shutil.rmtree(dst)
        elif dst.exists():
            done.current.append(lab)
            continue
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        done.copied.append(lab)

    if _changes(course, _load_config(text, config_file)):  # what the course lacks, our block included
        lines = _changes(course, theirs)  # our block is rewritten whole, from the instructor's own settings
        question = (
            "The qkv labs are released exactly as labs/ only with these settings in nbgrader_config.py; they "
            "apply to every assignment of the course:\n    " + "\n    ".join(lines) + "\nWrite them?"
        )
        if yes or ask(question):
            done.settings = lines
            block_text = f"\n\n{BEGIN}\n" + "\n".join(lines) + f"\n{END}\n"
            config_file.write_text(theirs_text.rstrip("\n") + block_text)
        else:
            done.declined = _changes(course, _load_config(text, config_file))
    return done


def _changes(course: Path, config) -> list[str]:
    """The lines that would give ``config`` the settings the labs need (``_needed``), where it differs."""
    lines = []
    for (section, name), value in _needed(course).items():
        current = _effective(config, section, name)
        if isinstance(value, dict) and isinstance(current, dict):
            value = {**current, **value}  # e.g. the Python code stub; other languages' stubs kept
        if value != current:
            lines.append(f"c.{section}.{name} = {value!r}")
    return lines


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b, ignore=[".ipynb_checkpoints"])
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)
