"""The pins stay consistent: Binder's and the lock file agree, and the lock holds what the README promises."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pins(path: Path) -> dict[str, str]:
    lines = [l.strip() for l in path.read_text().splitlines() if l.strip() and not l.startswith(("#", "-"))]
    return {name.lower().replace("_", "-"): version for name, version in (l.split("==") for l in lines)}


def test_lock_is_exact_and_pins_the_course_versions():
    lock = pins(ROOT / "requirements.lock")
    assert lock["torch"] == "2.13.0" and lock["jupyter-book"] == "1.0.4.post1"
    assert all(v and "*" not in v for v in lock.values())


def test_binder_pins_come_from_the_lock():
    lock, binder = pins(ROOT / "requirements.lock"), pins(ROOT / "binder" / "requirements.txt")
    assert binder, "binder/requirements.txt is empty"
    assert {n: v for n, v in binder.items() if lock.get(n) != v} == {}
