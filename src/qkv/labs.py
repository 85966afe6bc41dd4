"""Labs are generated from the solutions by nbgrader itself, never edited by hand.

``solutions/<id>/<id>.ipynb`` (nbgrader's source layout) -> ``labs/<id>/<id>.ipynb`` (its release
layout), with ``nbgrader generate_assignment --no-db --force`` (every lab in one process: qkv.nbgrader_cli).
``check`` regenerates into a temporary copy and compares bytes with the committed labs. ``copy_workspace`` gives a
student a copy of each lab, never overwritten, and reports the labs changed in the course since they were copied.

Editions: the Chinese labs ``labs/zh/<id>/<id>.ipynb`` come from the same solutions, their Markdown translated
from the book's catalogs (``qkv.i18n``, locales/README.md), then through nbgrader like the English ones: same
code, grade ids and points. They are committed, so that a student opens them from a clone, Binder or Colab.

Chapters: a lab's "Read first" link opens the chapter as a notebook beside the labs, in the course's shape that
every student copy keeps (the repository, Binder, the student distribution, ``qkv workspace``, the hub): the
English labs ``labs/<id>/`` link ``../../chapters/<chapter>.ipynb`` (the book's own pages), a translated edition's
labs ``labs/zh/<id>/`` link ``../chapters/<chapter>.ipynb``, the chapters of that edition, which ``generate``
writes into ``labs/zh/chapters/``, translated from the same catalogs as the book.
"""

from __future__ import annotations

import filecmp
import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from qkv import nbgrader_cli

__all__ = ["Workspace", "chapters_folder", "check", "copy_workspace", "generate", "lab_ids", "linked_chapters"]

SOURCE, RELEASE, CHAPTERS = "solutions", "labs", "chapters"
# A lab's link to a chapter, as the solutions write it (from labs/<id>/ to the book's chapters/).
CHAPTER_LINK = re.compile(r"\]\(\.\./\.\./chapters/(\w+)\.ipynb")
LOCALES = "locales"  # the catalogs the translated editions are made from
# Edition -> (folder of its labs, catalog language); English is the source. The Chinese labs live in labs/zh/.
EDITIONS = {"en": (RELEASE, None), "zh": (f"{RELEASE}/zh", "zh_CN")}


def lab_ids(course: Path) -> list[str]:
    """Every lab with a solution notebook ``solutions/<id>/<id>.ipynb``, sorted."""
    root = Path(course) / SOURCE
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.ipynb").is_file()) if root.is_dir() else []


def generate(course: Path, ids: list[str] | None = None, edition: str = "en") -> None:
    """Run ``nbgrader generate_assignment`` for each lab in ``ids`` (default: all) under ``course``."""
    course = Path(course).resolve()
    if edition != "en":
        return _generate_translated(course, ids or lab_ids(course), edition)
    common = [
        "--no-db",
        "--force",
        "--quiet",
        f"--CourseDirectory.root={course}",
        f"--CourseDirectory.source_directory={SOURCE}",
        f"--CourseDirectory.release_directory={RELEASE}",
    ]
    labs = ids or lab_ids(course)
    done = nbgrader_cli.run([["generate_assignment", lab, *common] for lab in labs], cwd=course)
    # nbgrader exits 0 even when it skips a notebook, so its log is checked too.
    if done.returncode != 0 or "[ERROR]" in done.stderr:
        raise RuntimeError(f"nbgrader generate_assignment {' '.join(labs)} failed:\n{done.stdout}{done.stderr}")


def translated_solutions(course: Path, ids: list[str], edition: str, dest: Path) -> dict[str, list[str]]:
    """Write ``dest/<id>/`` for each lab: its solution folder with the notebook's Markdown translated.

    Returns, per lab, the messages that had no current translation (they stay English)."""
    from . import i18n  # only the translated editions need Babel and MyST's tokenizer

    language = EDITIONS[edition][1]
    if language is None:
        raise ValueError(f"edition {edition!r} is the source, not a translation")
    missing = {}
    for lab in ids:
        shutil.copytree(course / SOURCE / lab, dest / lab, dirs_exist_ok=True)
        path = dest / lab / f"{lab}.ipynb"
        po = i18n.catalog_path(course, language, f"{RELEASE}/{lab}/{lab}")
        nb = json.loads(path.read_text(encoding="utf-8"))
        nb, missing[lab] = i18n.translate_notebook(nb, i18n.load_catalog(po)) if po.exists() else (nb, ["(no catalog)"])
        _relink(nb, depth=len(Path(EDITIONS[edition][0]).parts) - 1, chapters=f"../{CHAPTERS}/")
        nb.setdefault("metadata", {})["language"] = language.replace("_", "-")  # nbformat allows extra metadata
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return missing


def _relink(nb: dict, depth: int, chapters: str | None = None) -> None:
    """Relative links in Markdown written for ``labs/<id>/`` also resolve from an edition's folder ``depth`` levels
    further down (``labs/zh/<id>/``); with ``chapters``, a link to a chapter (``](../../chapters/x.ipynb)``) goes to
    ``chapters + x.ipynb`` instead: the edition's own chapters."""

    def relink(m: re.Match[str]) -> str:
        if m.group(1) and chapters is not None:
            return f"]({chapters}{m.group(1)}.ipynb"
        return "](" + "../" * depth + m.group(0)[2:]

    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown" and depth:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = re.sub(rf"{CHAPTER_LINK.pattern}|\]\(\.\./", relink, source)


def linked_chapters(course: Path, ids: list[str] | None = None) -> list[str]:
    """The chapters (``chapters/<name>.ipynb``) that the labs ``ids`` (default: all) link, sorted."""
    found: set[str] = set()
    for lab in ids or lab_ids(course):
        found.update(CHAPTER_LINK.findall((Path(course) / SOURCE / lab / f"{lab}.ipynb").read_text(encoding="utf-8")))
    return sorted(found)


def translated_chapters(course: Path, edition: str, dest: Path) -> dict[str, list[str]]:
    """Write ``dest/<chapter>.ipynb`` for each chapter the labs link: the chapter notebook with its Markdown (and its
    code's messages) translated from the book's catalog, its links to the labs pointing at the edition's labs beside
    it (``../<id>/<id>.ipynb``). Returns, per chapter, the messages that had no current translation."""
    from . import i18n

    language = EDITIONS[edition][1]
    if language is None:
        raise ValueError(f"edition {edition!r} is the source, not a translation")
    dest.mkdir(parents=True, exist_ok=True)
    missing: dict[str, list[str]] = {}
    for chapter in linked_chapters(course):
        nb = json.loads((course / CHAPTERS / f"{chapter}.ipynb").read_text(encoding="utf-8"))
        po = i18n.catalog_path(course, language, f"{CHAPTERS}/{chapter}")
        nb, missing[chapter] = i18n.translate_notebook(nb, i18n.load_catalog(po)) if po.exists() else (nb, ["(none)"])
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                cell["source"] = re.sub(rf"\]\(\.\./{RELEASE}/", "](../", text)
        nb.setdefault("metadata", {})["language"] = language.replace("_", "-")
        (dest / f"{chapter}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return missing


def _generate_translated(course: Path, ids: list[str], edition: str) -> None:
    """nbgrader on the translated solutions, in a temporary course; the release goes to ``labs/<edition>/``."""
    with tempfile.TemporaryDirectory(prefix=f"qkv-labs-{edition}-") as tmp:
        translated_solutions(course, ids, edition, Path(tmp) / SOURCE)
        shutil.copy(course / "nbgrader_config.py", tmp)
        generate(Path(tmp), ids)
        for lab in ids:
            target = course / EDITIONS[edition][0] / lab
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(Path(tmp) / RELEASE / lab, target)
    chapters = course / EDITIONS[edition][0] / CHAPTERS
    shutil.rmtree(chapters, ignore_errors=True)
    translated_chapters(course, edition, chapters)


def _files(folder: Path, skip: tuple[str, ...] = ()) -> set[Path]:
    return {
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and ".ipynb_checkpoints" not in p.parts and p.relative_to(folder).parts[0] not in skip
    }


def check(course: Path) -> list[str]:
    """Regenerate every lab of every edition in a temporary folder; return the committed files that differ,
    are missing or extra."""
    course = Path(course).resolve()
    problems: list[str] = []
    # The English labs/ holds the other editions' folders (labs/zh/); they are compared on their own.
    others = tuple(Path(folder).name for e, (folder, _) in EDITIONS.items() if e != "en")
    with tempfile.TemporaryDirectory(prefix="qkv-labs-") as tmp:
        shutil.copytree(course / SOURCE, Path(tmp) / SOURCE)
        for folder in (LOCALES, CHAPTERS):  # the catalogs and the chapters the translated editions are made from
            if (course / folder).is_dir():
                shutil.copytree(course / folder, Path(tmp) / folder)
        shutil.copy(course / "nbgrader_config.py", tmp)
        for edition, (folder, _) in EDITIONS.items():
            generate(Path(tmp), edition=edition)
            fresh, committed = Path(tmp) / folder, course / folder
            skip = others if edition == "en" else ()
            fresh_files = _files(fresh, skip)
            committed_files = _files(committed, skip) if committed.is_dir() else set()
            hint = f"`qkv labs --edition {edition}`"
            for rel in sorted(fresh_files | committed_files):
                if rel not in committed_files:
                    problems.append(f"{folder}/{rel}: missing (run {hint})")
                elif rel not in fresh_files:
                    problems.append(f"{folder}/{rel}: not generated from any solution")
                elif not filecmp.cmp(fresh / rel, committed / rel, shallow=False):
                    problems.append(
                        f"{folder}/{rel}: differs from what nbgrader generates (edited by hand? run {hint})"
                    )
    return problems


RECORD = ".qkv-labs.json"  # in the workspace: the sha256 of each course file when it was copied


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Workspace:
    """What ``copy_workspace`` did: files copied, and files whose course version changed since they were copied."""

    copied: list[Path] = field(default_factory=list)
    updated: dict[str, list[Path]] = field(default_factory=dict)  # lab -> the student's copies that are older
    written: list[Path] = field(default_factory=list)  # the new versions written next to them (``update=``)


def new_name(path: Path) -> Path:
    """Where the course's newer version of ``path`` goes: ``<lab>.ipynb`` -> ``<lab>.new.ipynb``."""
    return path.with_name(f"{path.stem}.new{path.suffix}")


def chapters_folder(edition: str) -> str:
    """Where an edition's labs find the chapters they link, in the course's shape: ``chapters`` beside ``labs/``
    for English, ``labs/zh/chapters`` for Chinese (see the module's docstring)."""
    return CHAPTERS if edition == "en" else f"{EDITIONS[edition][0]}/{CHAPTERS}"


def copy_workspace(course: Path, dest: Path, update: list[str] | None = None, edition: str = "en") -> Workspace:
    """Copy each lab of ``edition`` into ``dest`` for a student, in the course's shape (``dest/labs/<lab>/``,
    ``dest/labs/zh/<lab>/``), with the chapters its labs link where their "Read first" links find them
    (:func:`chapters_folder`); never overwriting a copy already there.

    ``dest/.qkv-labs.json`` records the sha256 of each course file when it was copied. A lab's file whose course
    version has changed since is listed in ``updated`` (nothing is written); for the labs in ``update``, the
    new version is written next to the student's copy as ``<name>.new.<ext>`` (never over an existing one)
    and recorded, so that the notice stops. Copies made before the record existed are taken as current.
    """
    dest = Path(dest)
    record_file = dest / RECORD
    record: dict[str, str] = json.loads(record_file.read_text()) if record_file.is_file() else {}
    known = lab_ids(course)
    unknown = sorted(set(update or []) - set(known))
    if unknown:
        raise ValueError(f"unknown lab(s) {', '.join(unknown)}; the labs are: {', '.join(known)}")
    done = Workspace()
    folder = EDITIONS[edition][0]
    for chapter in linked_chapters(course):
        src = Path(course) / chapters_folder(edition) / f"{chapter}.ipynb"
        out = dest / chapters_folder(edition) / src.name
        if src.is_file() and not out.exists():  # the book's pages: copied once, then the student's like the labs
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)
            done.copied.append(out)
    for lab in known:
        src, target = Path(course) / folder / lab, dest / folder / lab
        for f in sorted(p for p in src.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
            rel = f.relative_to(src)
            out, key, sha = target / rel, f"{folder}/{lab}/{rel.as_posix()}", _sha256(f)
            if not out.exists():
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out)
                done.copied.append(out)
            elif record.get(key, sha) != sha:
                if lab not in (update or []):
                    done.updated.setdefault(lab, []).append(out)
                    continue
                fresh = new_name(out)
                if fresh.exists() and _sha256(fresh) != sha:
                    raise FileExistsError(f"{fresh} exists and is not the course's new version; move it away first")
                shutil.copy2(f, fresh)
                done.written.append(fresh)
            record[key] = sha
    dest.mkdir(parents=True, exist_ok=True)
    record_file.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return done
