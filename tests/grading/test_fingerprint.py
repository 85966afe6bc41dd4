"""The result cache's key (qkv.grading.fingerprint) changes with every file that decides a grade: code and records."""

from __future__ import annotations

import shutil
from pathlib import Path

import qkv
from qkv.grading import fingerprint


def test_changing_a_labs_record_changes_the_fingerprint(tmp_path):
    """A copy of the installed package, whose record specs/soft_lookup.json is then edited: another digest."""
    package = tmp_path / "qkv"
    shutil.copytree(Path(qkv.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    record = package / "grading" / "specs" / "soft_lookup.json"
    before = fingerprint.source_digest(package)
    record.write_text(record.read_text().replace('"points"', '"points" ', 1))
    assert fingerprint.source_digest(package) != before
