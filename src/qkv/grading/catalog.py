"""What the grader's translation catalog holds: every template, status word and spec text a report can show
(``tools/i18n.py grader`` extracts them into ``locales/zh_CN/LC_MESSAGES/grader.po``).

Layer: grader side, above ``messages`` and ``specs``; imports them and ``qkv.selfcheck`` (whose messages share the
catalog), nothing else.
"""

from __future__ import annotations

from .messages import STATUS_WORDS, TEMPLATES

__all__ = ["catalog_messages"]


def catalog_messages() -> dict[str, str]:
    """Every message of the catalog: English text -> a comment for the translator (where it is used)."""
    out = {text: f"grader: {name}" for text, name in TEMPLATES.items()}
    out.update({text: f"status word: {key}" for key, text in STATUS_WORDS.items() if text not in out})
    from ..selfcheck import MESSAGES as SELF_CHECKS  # the labs' self-checks share this catalog
    from .specs import texts  # imports every spec: only when the catalog is built

    out.update({text: "qkv.selfcheck" for text in SELF_CHECKS if text not in out})

    for text, where in texts().items():
        out.setdefault(text, f"spec {where}")
    return out
