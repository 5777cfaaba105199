"""Smaller files of the same kind for the tests: some sentences of a blank-line-separated corpus text."""

from __future__ import annotations


def blocks(text: str, first: int, count: int) -> str:
    """Sentences ``first`` .. ``first + count - 1`` of blank-line-separated text (a CoNLL or CoNLL-2000
    file's), each as it is in ``text``, with a blank line after each."""
    return "\n\n".join(text.strip("\n").split("\n\n")[first:first + count]) + "\n\n"
