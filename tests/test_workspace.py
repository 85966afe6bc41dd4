"""`qkv workspace` (what `make lab` runs): a student's copy of a lab is never overwritten, and a lab changed in
the course since it was copied is announced, with the way to get the new version next to the student's copy."""

from __future__ import annotations

import json
from pathlib import Path

from qkv.cli import main


def _course(root: Path, labs: dict[str, str]) -> Path:
    """A course with one notebook per lab: solutions/<lab>/<lab>.ipynb and labs/<lab>/<lab>.ipynb."""
    for lab, text in labs.items():
        for folder in ("solutions", "labs"):
            (root / folder / lab).mkdir(parents=True, exist_ok=True)
            (root / folder / lab / f"{lab}.ipynb").write_text(text)
    return root


def _workspace(course: Path, work: Path, capsys, *extra: str) -> tuple[int, str]:
    rc = main(["workspace", str(work), "--course", str(course), *extra])
    return rc, capsys.readouterr().out


def test_copies_once_and_never_overwrites(tmp_path, capsys):
    course = _course(tmp_path / "course", {"alpha": "v1 alpha", "beta": "v1 beta"})
    work = tmp_path / "work"
    rc, out = _workspace(course, work, capsys)
    assert rc == 0 and "2 new file(s)" in out and "NOTICE" not in out
    assert (work / "labs" / "alpha" / "alpha.ipynb").read_text() == "v1 alpha"
    (work / "labs" / "alpha" / "alpha.ipynb").write_text("my answers")
    rc, out = _workspace(course, work, capsys)
    assert rc == 0 and "0 new file(s)" in out and "NOTICE" not in out
    assert (work / "labs" / "alpha" / "alpha.ipynb").read_text() == "my answers"


def test_updated_lab_is_announced_and_offered_next_to_the_copy(tmp_path, capsys):
    course = _course(tmp_path / "course", {"alpha": "v1 alpha", "beta": "v1 beta"})
    work = tmp_path / "work"
    _workspace(course, work, capsys)
    (work / "labs" / "alpha" / "alpha.ipynb").write_text("my answers")
    (course / "labs" / "alpha" / "alpha.ipynb").write_text("v2 alpha: a fixed self-check")

    rc, out = _workspace(course, work, capsys)
    assert rc == 0
    notices = [line for line in out.splitlines() if line.startswith("NOTICE")]
    assert len(notices) == 1 and "alpha" in notices[0] and "beta" not in notices[0]
    assert "alpha.new.ipynb" in notices[0] and f"workspace {work} --update alpha" in out
    assert (work / "labs" / "alpha" / "alpha.ipynb").read_text() == "my answers"  # untouched
    assert not (work / "labs" / "alpha" / "alpha.new.ipynb").exists()  # nothing written until asked
    rc, out = _workspace(course, work, capsys)
    assert "NOTICE: the lab alpha" in out  # said again until the student takes the new version

    rc, out = _workspace(course, work, capsys, "--update", "alpha")
    assert rc == 0 and "NOTICE" not in out and "alpha.new.ipynb" in out
    assert (work / "labs" / "alpha" / "alpha.new.ipynb").read_text() == "v2 alpha: a fixed self-check"
    assert (work / "labs" / "alpha" / "alpha.ipynb").read_text() == "my answers"
    rc, out = _workspace(course, work, capsys)
    assert "NOTICE" not in out

    # A later update: a .new file the student has been editing is never replaced.
    (work / "labs" / "alpha" / "alpha.new.ipynb").write_text("my answers, moved over")
    (course / "labs" / "alpha" / "alpha.ipynb").write_text("v3 alpha")
    assert "NOTICE: the lab alpha" in _workspace(course, work, capsys)[1]
    assert main(["workspace", str(work), "--course", str(course), "--update", "alpha"]) == 2
    assert "alpha.new.ipynb exists" in capsys.readouterr().err
    assert (work / "labs" / "alpha" / "alpha.new.ipynb").read_text() == "my answers, moved over"


def test_a_workspace_from_before_the_record_is_taken_as_current(tmp_path, capsys):
    course = _course(tmp_path / "course", {"alpha": "v1 alpha"})
    work = tmp_path / "work"
    (work / "labs" / "alpha").mkdir(parents=True)
    (work / "labs" / "alpha" / "alpha.ipynb").write_text("my answers")  # copied by an older `qkv workspace`: no record
    rc, out = _workspace(course, work, capsys)
    assert rc == 0 and "NOTICE" not in out and (work / "labs" / "alpha" / "alpha.ipynb").read_text() == "my answers"
    assert set(json.loads((work / ".qkv-labs.json").read_text())) == {"labs/alpha/alpha.ipynb"}
    (course / "labs" / "alpha" / "alpha.ipynb").write_text("v2 alpha")
    assert "NOTICE: the lab alpha" in _workspace(course, work, capsys)[1]


def test_unknown_lab_to_update_is_an_error(tmp_path, capsys):
    course = _course(tmp_path / "course", {"alpha": "v1"})
    assert main(["workspace", str(tmp_path / "work"), "--course", str(course), "--update", "gamma"]) == 2
    assert "unknown lab(s) gamma; the labs are: alpha" in capsys.readouterr().err
