"""Attachment scores of predicted dependency trees against gold trees.

UAS is the percentage of tokens whose predicted head is the gold head; LAS
also requires the predicted DEPREL to equal the gold one. The "no
punctuation" variants skip tokens whose form is made only of Unicode
punctuation characters (general category P*), as the CoNLL-X evaluation
script does; so ``$`` (category Sc) and the backtick (Sk) count as words.
LAS on universal relations compares DEPREL without its subtype (``nmod``
for ``nmod:poss``) and counts every word, as the CoNLL 2018 shared task
scorer (``udeval``) does on files with the same words.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from egnlp.corpora import CorpusError, Sentence
from egnlp.corpora.sentence import BLANK

# Sentence-length buckets of the by-length breakdown: (label, shortest, longest).
LENGTH_BUCKETS: tuple[tuple[str, int, float], ...] = (
    ("1-10", 1, 10),
    ("11-20", 11, 20),
    ("21-30", 21, 30),
    ("31-40", 31, 40),
    ("41+", 41, float("inf")),
)


def is_punct(form: str) -> bool:
    """True when the form is non-empty and every character is Unicode punctuation (P*)."""
    return bool(form) and all(unicodedata.category(char).startswith("P") for char in form)


def universal(deprel: str) -> str:
    """A dependency relation without its language-specific subtype: ``nmod:poss`` -> ``nmod``."""
    return deprel.split(":", 1)[0]


def attachment_scores(gold: Sequence[Sentence], pred: Sequence[Sentence]) -> dict:
    """Score predicted trees against gold trees of the same sentences.

    Args:
        gold: sentences with gold heads (and labels).
        pred: the same sentences, in the same order, with predicted heads.

    Returns:
        A dict with ``tokens`` and ``tokens_nopunct`` (counts), ``uas``,
        ``las``, ``las_universal``, ``uas_nopunct``, ``las_nopunct``
        (percentages), and
        ``by_length``: one ``{"bucket", "sentences", "tokens", "uas"}`` dict per
        sentence-length bucket 1-10, 11-20, 21-30, 31-40, 41+ (UAS over all
        tokens of the bucket's sentences). The LAS keys are None when the
        prediction carries no labels (every DEPREL ``_``); a percentage is
        None when it would count no tokens.

    Raises:
        CorpusError: the two sides differ in sentence count, in a sentence's
            length or forms, or a sentence lacks heads.
    """
    if len(gold) != len(pred):
        raise CorpusError(f"gold has {len(gold)} sentences but the prediction has {len(pred)}")
    for index, (gold_sentence, pred_sentence) in enumerate(zip(gold, pred), start=1):
        _check_pair(index, gold_sentence, pred_sentence)
    labelled = any(label != BLANK for sentence in pred for label in sentence.deprels or ())

    counts = {"tokens": 0, "uas": 0, "las": 0, "las_universal": 0, "tokens_nopunct": 0, "uas_nopunct": 0,
              "las_nopunct": 0}
    buckets = [{"bucket": label, "sentences": 0, "tokens": 0, "correct": 0} for label, _, _ in LENGTH_BUCKETS]
    for gold_sentence, pred_sentence in zip(gold, pred):
        sentence_correct = 0
        for form, gold_head, gold_label, pred_head, pred_label in zip(
            gold_sentence.forms, gold_sentence.heads, gold_sentence.deprels, pred_sentence.heads, pred_sentence.deprels
        ):
            head_ok = gold_head == pred_head
            both_ok = head_ok and gold_label == pred_label
            sentence_correct += head_ok
            counts["tokens"] += 1
            counts["uas"] += head_ok
            counts["las"] += both_ok
            counts["las_universal"] += head_ok and universal(gold_label) == universal(pred_label)
            if not is_punct(form):
                counts["tokens_nopunct"] += 1
                counts["uas_nopunct"] += head_ok
                counts["las_nopunct"] += both_ok
        bucket = buckets[_bucket_index(len(gold_sentence))]
        bucket["sentences"] += 1
        bucket["tokens"] += len(gold_sentence)
        bucket["correct"] += sentence_correct

    return {
        "tokens": counts["tokens"],
        "tokens_nopunct": counts["tokens_nopunct"],
        "uas": _percent(counts["uas"], counts["tokens"]),
        "las": _percent(counts["las"], counts["tokens"]) if labelled else None,
        "las_universal": _percent(counts["las_universal"], counts["tokens"]) if labelled else None,
        "uas_nopunct": _percent(counts["uas_nopunct"], counts["tokens_nopunct"]),
        "las_nopunct": _percent(counts["las_nopunct"], counts["tokens_nopunct"]) if labelled else None,
        "by_length": [
            {
                "bucket": bucket["bucket"],
                "sentences": bucket["sentences"],
                "tokens": bucket["tokens"],
                "uas": _percent(bucket["correct"], bucket["tokens"]),
            }
            for bucket in buckets
        ],
    }


def check_same_words(gold: Sentence, pred: Sentence, where: str) -> None:
    """Raise a CorpusError starting with ``where`` unless the two sentences have the same words."""
    if len(gold) != len(pred):
        raise CorpusError(f"{where}: gold has {len(gold)} tokens but the prediction has {len(pred)}")
    for position, (gold_form, pred_form) in enumerate(zip(gold.forms, pred.forms), start=1):
        if gold_form != pred_form:
            raise CorpusError(f"{where}: token {position} is {gold_form!r} in gold but {pred_form!r} in the prediction")


def _check_pair(index: int, gold: Sentence, pred: Sentence) -> None:
    """Raise a CorpusError naming sentence ``index`` unless the two sides match."""
    where = f"sentence {index} ({gold.source}:{gold.line} vs {pred.source}:{pred.line})"
    check_same_words(gold, pred, where)
    if gold.heads is None:
        raise CorpusError(f"{where}: the gold sentence has no heads")
    if pred.heads is None:
        raise CorpusError(f"{where}: the predicted sentence has no heads")


def _bucket_index(length: int) -> int:
    """Index in LENGTH_BUCKETS of the bucket holding sentences of this length."""
    return next(i for i, (_, low, high) in enumerate(LENGTH_BUCKETS) if low <= length <= high)


def _percent(part: int, whole: int) -> float | None:
    """``100 * part / whole``, or None when ``whole`` is 0."""
    return 100.0 * part / whole if whole else None
