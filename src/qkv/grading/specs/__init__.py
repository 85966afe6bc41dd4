"""One grading spec per lab: ``specs/<lab>.py`` defines ``SPEC = LabSpec(...)``. See README.md here.

:func:`texts` lists what the specs show a student, for the translation catalog (``catalog.catalog_messages``).
"""

from __future__ import annotations

import importlib
import pkgutil

from qkv.grading.spec import Item, item_generator, load_spec


def texts() -> dict[str, str]:
    """What every lab's spec shows: item descriptions and titles, written questions' titles, case labels
    (drawn with a fixed seed: a label says what is checked, never a drawn value). Text -> where it comes from."""
    found: dict[str, str] = {}
    for module in pkgutil.iter_modules(__path__):
        if not hasattr(importlib.import_module(f"{__name__}.{module.name}"), "SPEC"):
            continue  # shared helpers (contracts.py)
        for item in load_spec(module.name).items:
            where = f"{module.name}: {item.grade_id}"
            shown = {"title": item.title}
            if isinstance(item, Item):
                shown["description"] = item.describe
                for n, case in enumerate(item.cases(item_generator(0, item.grade_id))):
                    shown[f"case {n + 1}"] = case.label
            for kind, text in shown.items():
                if text:
                    found.setdefault(text, f"{where} {kind}")
    return found
