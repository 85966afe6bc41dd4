"""What of a page rendered in Chinese is still English prose (used by the grader's language tests)."""

from __future__ import annotations

import html
import re

SENTENCE = re.compile(r"[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}")  # three English words in a row
# Python's own words stay as Python prints them: an exception's message, to the end of its line or list item.
EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning|Interrupt)\b[^\n<]*")


def english_left(page: str) -> list[str]:
    """The English sentences in ``page`` outside code, tags, Python's exception messages and a student's own
    written answers."""
    text = re.sub(r'<code>.*?</code>|<style>.*?</style>|<div class="answer">.*?</div>', " ", page, flags=re.S)
    text = EXCEPTION.sub(" ", html.unescape(re.sub(r"<[^>]+>", "\n", text)))
    return SENTENCE.findall(text)
