"""Scores of predicted tags against gold tags: token accuracy, unknown-word accuracy, chunk P/R/F1.

Chunks follow the definition of the CoNLL-2000 evaluation script
(``conlleval``) for IOB tags ``B-X``, ``I-X`` and ``O``:

- a chunk of type X starts at ``B-X``, and at ``I-X`` when the previous tag
  is ``O``, the sentence start, or a tag of another type (IOB1 and sloppy
  IOB2 both work);
- it ends before the next token whose tag is ``O`` or ``B-*``, or whose type
  differs, or at the end of the sentence;
- a predicted chunk is correct when a gold chunk has the same first token,
  the same last token and the same type.

precision = correct / predicted chunks, recall = correct / gold chunks,
F1 = 2PR / (P + R), all in percent (0 when the denominator is 0, as
conlleval prints).  Sentences are scored separately, so no chunk spans a
sentence boundary.
"""

from __future__ import annotations

from collections import Counter
from typing import Collection, Sequence

from egnlp.corpora import CorpusError, Sentence
from egnlp.corpora.sentence import LABEL_COLUMNS

__all__ = ["chunks", "is_iob", "prf", "tag_scores"]



def is_iob(tag: str) -> bool:
    """True for ``O`` and ``B-X`` / ``I-X`` with a non-empty type X."""
    return tag == "O" or (len(tag) > 2 and tag[:2] in ("B-", "I-"))


def chunks(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """The chunks of one sentence's IOB tags as ``(first, last, type)`` token indices (0-based, inclusive).

    Raises:
        ValueError: a tag that is not ``O``, ``B-X`` or ``I-X``.
    """
    out: list[tuple[int, int, str]] = []
    start, kind = -1, ""  # the open chunk, if start >= 0
    for i, tag in enumerate(tags):
        if not is_iob(tag):
            raise ValueError(f"tag {tag!r} of token {i + 1} is not an IOB tag (O, B-X or I-X)")
        prefix, typ = (tag, "") if tag == "O" else (tag[0], tag[2:])
        begins = prefix == "B" or (prefix == "I" and (start < 0 or typ != kind))
        if start >= 0 and (prefix == "O" or begins):
            out.append((start, i - 1, kind))
            start = -1
        if begins:
            start, kind = i, typ
    if start >= 0:
        out.append((start, len(tags) - 1, kind))
    return out


def prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) in percent; 0 where a denominator is 0."""
    p = 100.0 * correct / predicted if predicted else 0.0
    r = 100.0 * correct / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _labels(sentence: Sentence, column: str, which: str, number: int) -> list[str]:
    tags = sentence.labels(column)
    if tags is None and len(sentence):
        raise CorpusError(f"{_where(sentence, which, number)}: no chunk column (11th column) to score")
    return tags or []


def _where(sentence: Sentence, which: str, number: int) -> str:
    if sentence.source and sentence.source != "<string>":
        return f"{sentence.source}:{sentence.line}: {which} sentence {number}"
    return f"{which} sentence {number}"


def tag_scores(gold_sentences: Sequence[Sentence], pred_sentences: Sequence[Sentence], column: str = "pos",
               train_vocab: Collection[str] | None = None) -> dict:
    """Score the ``column`` (``"pos"`` or ``"chunk"``) of predicted sentences against gold ones.

    Returns a dict with ``column``, ``sentences``, ``tokens``, ``correct``,
    ``accuracy`` (%), ``unknown_tokens`` (tokens whose form is not in
    ``train_vocab``; None without a vocabulary), ``unknown_accuracy`` (%;
    None without a vocabulary or without unknown tokens), and for IOB tags
    (always for the chunk column; for another column when every gold and
    predicted tag is ``O``, ``B-X`` or ``I-X``) ``chunks_gold``,
    ``chunks_pred``, ``chunks_correct``, ``precision``, ``recall``, ``f1``
    (%) and ``by_type`` (the same per chunk type).

    Raises:
        CorpusError: different numbers of sentences, a sentence whose tokens
            differ (count or forms), or a missing chunk column; the message
            names the sentence.
        ValueError: an unknown column, or a chunk tag that is not IOB.
    """
    if column not in LABEL_COLUMNS:
        raise ValueError(f"column must be one of {', '.join(LABEL_COLUMNS)}, not {column!r}")
    if len(gold_sentences) != len(pred_sentences):
        raise CorpusError(f"gold has {len(gold_sentences)} sentences, prediction {len(pred_sentences)}")
    vocab = None
    if train_vocab is not None:
        vocab = train_vocab if isinstance(train_vocab, (set, frozenset, dict)) else frozenset(train_vocab)
    tokens = correct = unknown = unknown_correct = 0
    gold_tags: list[list[str]] = []
    pred_tags: list[list[str]] = []
    for number, (g, p) in enumerate(zip(gold_sentences, pred_sentences), start=1):
        if len(g) != len(p):
            raise CorpusError(f"{_where(p, 'predicted', number)}: {len(p)} tokens, gold has {len(g)}")
        g_forms, p_forms = g.forms, p.forms
        if g_forms != p_forms:
            k = next(i for i, (a, b) in enumerate(zip(g_forms, p_forms)) if a != b)
            raise CorpusError(f"{_where(p, 'predicted', number)}: token {k + 1} is {p_forms[k]!r}, "
                              f"gold has {g_forms[k]!r}")
        gt, pt = _labels(g, column, "gold", number), _labels(p, column, "predicted", number)
        gold_tags.append(gt)
        pred_tags.append(pt)
        for form, a, b in zip(g_forms, gt, pt):
            hit = a == b
            tokens += 1
            correct += hit
            if vocab is not None and form not in vocab:
                unknown += 1
                unknown_correct += hit
    scores: dict = {
        "column": column,
        "sentences": len(gold_sentences),
        "tokens": tokens,
        "correct": correct,
        "accuracy": 100.0 * correct / tokens if tokens else None,
        "unknown_tokens": unknown if vocab is not None else None,
        "unknown_accuracy": 100.0 * unknown_correct / unknown if vocab is not None and unknown else None,
    }
    iob = column == "chunk" or all(is_iob(t) for tags in (gold_tags, pred_tags) for sent in tags for t in sent)
    if iob and tokens:
        scores.update(chunk_scores(gold_tags, pred_tags))
    return scores


def chunk_scores(gold_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict:
    """conlleval chunk counts and P/R/F1 (overall and ``by_type``) of per-sentence IOB tag sequences."""
    n_gold: Counter[str] = Counter()
    n_pred: Counter[str] = Counter()
    n_correct: Counter[str] = Counter()
    for number, (gt, pt) in enumerate(zip(gold_tags, pred_tags), start=1):
        try:
            g, p = chunks(gt), chunks(pt)
        except ValueError as exc:
            raise ValueError(f"sentence {number}: {exc}") from None
        n_gold.update(c[2] for c in g)
        n_pred.update(c[2] for c in p)
        n_correct.update(c[2] for c in set(g) & set(p))
    total_correct, total_pred, total_gold = (sum(c.values()) for c in (n_correct, n_pred, n_gold))
    precision, recall, f1 = prf(total_correct, total_pred, total_gold)
    by_type = {}
    for typ in sorted(set(n_gold) | set(n_pred)):
        tp, tr, tf = prf(n_correct[typ], n_pred[typ], n_gold[typ])
        by_type[typ] = {"gold": n_gold[typ], "pred": n_pred[typ], "correct": n_correct[typ],
                        "precision": tp, "recall": tr, "f1": tf}
    return {"chunks_gold": total_gold, "chunks_pred": total_pred, "chunks_correct": total_correct,
            "precision": precision, "recall": recall, "f1": f1, "by_type": by_type}


def choose_column(gold: Sequence[Sentence], pred: Sequence[Sentence], gold_name: str = "GOLD",
                  pred_name: str = "PRED") -> str:
    """The column to score when none is given.

    ``chunk`` when both sides have chunk tags (unless the chunk columns are
    identical and the POS columns differ: a POS tagger's output on chunking
    data, e.g. an export of ``conll2000-pos``, scores ``pos``). Otherwise the
    tag column (``pos``: XPOS, ``upos``: UPOS) that both files fill (not all
    ``_``); where both fill both, the one in which the prediction differs
    from the gold file (a tagger writes its own column and keeps the
    others).

    Raises:
        CorpusError: no tag column is filled on both sides, or the choice is
            not clear (name one with ``--column``).
    """
    if len(gold) != len(pred):
        raise CorpusError(f"{gold_name} has {len(gold)} sentences, {pred_name} has {len(pred)}")
    if all(s.chunks is not None for s in gold) and all(s.chunks is not None for s in pred):
        same_chunks = all(g.chunks == p.chunks for g, p in zip(gold, pred))
        same_pos = all(g.pos == p.pos for g, p in zip(gold, pred))
        return "pos" if same_chunks and not same_pos else "chunk"
    filled = [c for c in ("pos", "upos") if _fills(gold, c) and _fills(pred, c)]
    if not filled:
        raise CorpusError(f"{pred_name} and {gold_name} fill no tag column in common (XPOS and UPOS are '_' on one "
                          "side): nothing to score")
    if len(filled) == 2:
        differ = [c for c in filled if any(g.labels(c) != p.labels(c) for g, p in zip(gold, pred))]
        if len(differ) != 1:
            raise CorpusError(f"{pred_name} and {gold_name} fill both XPOS and UPOS and the predicted one is not "
                              "clear: give --column xpos or --column upos (or --model MODEL)")
        filled = differ
    return filled[0]


def _fills(sentences: Sequence[Sentence], column: str) -> bool:
    """Whether some token of ``sentences`` has a tag other than ``_`` in ``column``."""
    return any(tag != "_" for s in sentences for tag in s.labels(column) or ())
