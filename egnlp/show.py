"""Pictures of dependency trees: one sentence of a CoNLL file as a self-contained SVG.

The words stand in a row, each with its coarse tag (CoNLL-X CPOSTAG, CoNLL-U
UPOS) below it; every word gets one arc from its head, drawn above the words
with an arrow at the word and its DEPREL at the top of the arc. A word
headed by the root gets a vertical arc from above. An arc that spans other
arcs is drawn higher than they are, so nested arcs do not overlap.

Given gold and predicted trees of the same sentence, the gold tree is drawn
above the predicted one; in the prediction an arc whose head or label
differs from gold is red (class ``wrong-head`` or ``wrong-label``), and in
the gold tree the arcs the prediction missed are dashed (class ``missed``).
A prediction without labels (DEPREL ``_`` on every word) is judged on heads
only.

Every arc is one ``<g class="arc ...">`` element with ``data-dependent``,
``data-head`` and ``data-label`` attributes and a ``<title>`` (a tooltip in
browsers). The SVG has its own style sheet and needs no font, script or file
beside it.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from egnlp.corpora import CorpusError, Sentence, parse_conll, read_conll
from egnlp.base.files import decode, write_text_atomic
from egnlp.corpora.sentence import BLANK
from egnlp.parser.attachment import check_same_words

# Layout, in SVG user units (pixels at 100%).
FONT_SIZE = 14
CHAR_WIDTH = 8.4  # the advance of an average character of the sans-serif font at FONT_SIZE
WORD_GAP = 22  # between the widest texts of neighbouring words
MARGIN = 16
LEVEL_HEIGHT = 34  # the rise of an arc per level of arcs below it
TITLE_HEIGHT = 26
WORD_LINE = 18  # from the word's baseline to the tag's baseline
ARROW = 6

STYLE = """
text { font-family: sans-serif; font-size: 14px; fill: #111; }
text.tag { font-size: 11px; fill: #666; }
text.title { font-size: 12px; fill: #444; }
text.label { font-size: 11px; fill: #124; }
.arc path { fill: none; stroke: #124; stroke-width: 1.3; }
.arc.missed path { stroke-dasharray: 5 3; }
.arc.wrong-head path, .arc.wrong-label path { stroke: #d11; stroke-width: 1.8; }
.arc.wrong-label text.label, .arc.wrong-head text.label { fill: #d11; }
"""

STDIN = "-"  # as an input file: stdin; as the output: stdout
# Characters XML 1.0 does not allow (the reader lets U+FFFE, U+FFFF and C1 controls through).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\x7f-\x84\x86-\x9f]")


@dataclass(frozen=True)
class Arc:
    """One word's arc: ``dependent`` and ``head`` are 1-based token numbers (head 0 is the root)."""

    dependent: int
    head: int
    label: str


def tree_arcs(sentence: Sentence) -> list[Arc]:
    """The arcs of a sentence with heads, one per word, in word order."""
    if sentence.heads is None:
        raise CorpusError(f"{sentence.source}:{sentence.line}: the sentence has no heads (HEAD is '_' on every "
                          "word); there is no tree to draw")
    return [Arc(i, head, label) for i, (head, label) in enumerate(zip(sentence.heads, sentence.deprels), start=1)]


def wrong_arcs(gold: Sentence, pred: Sentence) -> dict[int, str]:
    """The words whose predicted arc differs from gold: ``{dependent: "wrong-head" | "wrong-label"}``.

    Labels count only when the prediction has some (not ``_`` on every word).
    """
    gold_arcs, pred_arcs = tree_arcs(gold), tree_arcs(pred)
    labelled = any(arc.label != BLANK for arc in pred_arcs)
    out = {}
    for g, p in zip(gold_arcs, pred_arcs):
        if g.head != p.head:
            out[p.dependent] = "wrong-head"
        elif labelled and g.label != p.label:
            out[p.dependent] = "wrong-label"
    return out


def render_svg(sentence: Sentence, pred: Sentence | None = None, *, title: str | None = None,
               pred_title: str | None = None) -> str:
    """Draw a sentence's tree; with ``pred`` (the same words), gold above and the prediction below.

    Args:
        sentence: the sentence to draw (the gold tree when ``pred`` is given).
        pred: the predicted tree of the same words, or None.
        title, pred_title: the line above each tree (default: file and line).

    Raises:
        CorpusError: a sentence without heads, or ``pred`` with other words.
    """
    gold_arcs = tree_arcs(sentence)
    widths = [max(text_width(form), text_width(tag), 2 * CHAR_WIDTH)
              for form, tag in zip(sentence.forms, _tags(sentence))]
    centres, x = [], MARGIN
    for width in widths:
        centres.append(x + width / 2)
        x += width + WORD_GAP
    width = max(x - WORD_GAP + MARGIN, 240.0)
    panels: list[tuple[Sentence, list[Arc], dict[int, str], str]] = []
    if pred is None:
        panels.append((sentence, gold_arcs, {}, title or where(sentence)))
    else:
        check_same_words(sentence, pred, f"{where(sentence)} vs {where(pred)}")
        wrong = wrong_arcs(sentence, pred)
        labelled = any(label != BLANK for label in pred.deprels)
        words = len(sentence)
        heads_wrong = sum(kind == "wrong-head" for kind in wrong.values())
        summary = f"{heads_wrong} of {words} heads wrong"
        if labelled:
            summary += f", {len(wrong)} of {words} arcs wrong (head or label)"
        panels.append((sentence, gold_arcs, {d: "missed" for d in wrong}, title or f"gold: {where(sentence)}"))
        panels.append((pred, tree_arcs(pred), wrong, pred_title or f"predicted: {where(pred)}; {summary}"))
        width = max(width, MARGIN * 2 + max(text_width(panel[3]) for panel in panels))
    body, y = [], 0.0
    for panel_sentence, arcs, marks, heading in panels:
        svg, height = _panel(panel_sentence, arcs, marks, heading, centres, widths, y)
        body.append(svg)
        y += height
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}">\n'
            f"<style>{STYLE}</style>\n"
            "<defs>\n"
            + "".join(f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{ARROW}" '
                      f'markerHeight="{ARROW}" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>\n'
                      for name, colour in (("ok", "#124"), ("wrong", "#d11")))
            + "</defs>\n"
            '<rect width="100%" height="100%" fill="#fff"/>\n'
            + "".join(body) + "</svg>\n")


def _panel(sentence: Sentence, arcs: Sequence[Arc], marks: dict[int, str], heading: str, centres: Sequence[float],
           widths: Sequence[float], top: float) -> tuple[str, float]:
    """One tree: its SVG group and its height, drawn from ``top`` down."""
    levels = arc_levels(arcs)
    offsets = start_offsets(arcs, widths)
    highest = max(levels.values(), default=0) + 1  # the root arcs come from above every other arc
    base = top + TITLE_HEIGHT + highest * LEVEL_HEIGHT + 12  # where the arcs end, just above the words
    parts = [f'<g class="tree">\n<text class="title" x="{MARGIN}" y="{top + 17:.1f}">{text(heading)}</text>\n']
    for arc in arcs:
        mark = marks.get(arc.dependent, "")
        x_dep = centres[arc.dependent - 1]
        if arc.head == 0:
            peak = base - highest * LEVEL_HEIGHT
            path = f"M{x_dep:.1f},{peak:.1f} L{x_dep:.1f},{base:.1f}"
            label_x, label_y = x_dep, peak - 5
            head_text = "the root"
        else:
            # the arrow ends at the word's centre; arcs leave their head beside it (see start_offsets)
            x0, x1 = centres[arc.head - 1] + offsets[arc.dependent], x_dep
            rise = levels[arc.dependent] * LEVEL_HEIGHT
            path = (f"M{x0:.1f},{base:.1f} C{x0:.1f},{base - rise * 4 / 3:.1f} {x1:.1f},{base - rise * 4 / 3:.1f} "
                    f"{x1:.1f},{base:.1f}")
            label_x, label_y = (x0 + x1) / 2, base - rise - 4
            head_text = f"{arc.head} {sentence.forms[arc.head - 1]!r}"
        marker = "wrong" if mark.startswith("wrong") else "ok"
        tip = f"{arc.dependent} {sentence.forms[arc.dependent - 1]!r} <- {head_text}: {arc.label}"
        parts.append(f'<g class={quoteattr(" ".join(filter(None, ("arc", mark))))} data-dependent="{arc.dependent}" '
                     f'data-head="{arc.head}" data-label={quoteattr(_xml_safe(arc.label))}>'
                     f"<title>{text(tip)}</title>"
                     f'<path d="{path}" marker-end="url(#arrow-{marker})"/>')
        if arc.label != BLANK:
            parts.append(f'<text class="label" x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="middle">'
                         f"{text(arc.label)}</text>")
        parts.append("</g>\n")
    word_y = base + FONT_SIZE + 4
    for i, (form, tag) in enumerate(zip(sentence.forms, _tags(sentence))):
        parts.append(f'<text class="word" x="{centres[i]:.1f}" y="{word_y:.1f}" text-anchor="middle">'
                     f"{text(form)}</text>\n")
        if tag:
            parts.append(f'<text class="tag" x="{centres[i]:.1f}" y="{word_y + WORD_LINE:.1f}" '
                         f'text-anchor="middle">{text(tag)}</text>\n')
    parts.append("</g>\n")
    return "".join(parts), word_y + WORD_LINE + 14 - top


def arc_levels(arcs: Sequence[Arc]) -> dict[int, int]:
    """The height of each non-root arc in levels: 1 + the highest level of the arcs within its span.

    Args:
        arcs: one per word; root arcs are left out of the result.
    """
    spans = sorted(((min(a.head, a.dependent), max(a.head, a.dependent), a.dependent) for a in arcs if a.head),
                   key=lambda span: span[1] - span[0])
    levels: dict[int, int] = {}
    placed: list[tuple[int, int, int]] = []
    for left, right, dependent in spans:
        level = 1 + max((lvl for l2, r2, lvl in placed if left <= l2 and r2 <= right), default=0)
        levels[dependent] = level
        placed.append((left, right, level))
    return levels


def start_offsets(arcs: Sequence[Arc], widths: Sequence[float]) -> dict[int, float]:
    """Where each non-root arc leaves its head, from the head's centre (by dependent).

    Arcs to the right leave right of the centre, arcs to the left left of it;
    of the arcs on one side the longest (the highest) leaves nearest to the
    centre, so that arcs from one word do not cross where they start.
    """
    out: dict[int, float] = {}
    by_side: dict[tuple[int, int], list[Arc]] = {}
    for arc in arcs:
        if arc.head:
            by_side.setdefault((arc.head, 1 if arc.dependent > arc.head else -1), []).append(arc)
    for (head, side), group in by_side.items():
        group.sort(key=lambda arc: -abs(arc.dependent - arc.head))
        room = max(widths[head - 1] / 2 - 2, 5.0)
        step = min(3.0, (room - 5) / max(len(group) - 1, 1))
        for rank, arc in enumerate(group):
            out[arc.dependent] = side * (5 + rank * step)
    return out


def where(sentence: Sentence) -> str:
    """``file:line`` of a sentence, with its ``# sent_id`` when it has one."""
    ident = next((line.split("=", 1)[1].strip() for _, line in sentence.aside
                  if line.startswith("#") and line[1:].split("=", 1)[0].strip() == "sent_id" and "=" in line), None)
    return f"{sentence.source}:{sentence.line}" + (f" ({ident})" if ident else "")


def pick(sentences: Sequence[Sentence], number: int, source: str) -> Sentence:
    """Sentence ``number`` (1-based) of a file, or a CorpusError saying how many there are."""
    if not 1 <= number <= len(sentences):
        raise CorpusError(f"{source}: no sentence {number}; the file has {len(sentences)} "
                          f"sentence{'s' if len(sentences) != 1 else ''} (1..{len(sentences)})")
    return sentences[number - 1]


def draw_files(file: str | os.PathLike[str], pred: str | os.PathLike[str] | None = None, *, sentence: int = 1,
               encoding: str = "utf-8") -> tuple[str, Sentence, dict[int, str]]:
    """The SVG of sentence ``sentence`` of ``file`` (gold, above) and of ``pred`` (below, when given).

    Returns:
        The SVG text, the sentence drawn (gold when ``pred`` is given) and the
        wrong arcs of the prediction (see :func:`wrong_arcs`; empty without ``pred``).

    Raises:
        CorpusError: any error of :func:`read_conll`, a sentence number out of
            range, files with different numbers of sentences, or a predicted
            sentence with other words than the gold one.
    """
    if pred is not None and os.fspath(file) == os.fspath(pred) == STDIN:
        raise CorpusError("gold and prediction cannot both be read from stdin ('-')")
    sentences, name = read_trees(file, encoding)
    chosen = pick(sentences, sentence, name)
    if pred is None:
        return render_svg(chosen), chosen, {}
    predicted, pred_name = read_trees(pred, encoding)
    if len(predicted) != len(sentences):
        raise CorpusError(f"{name} has {len(sentences)} sentences but {pred_name} has "
                          f"{len(predicted)}; gold and prediction must hold the same sentences")
    other = predicted[sentence - 1]
    return render_svg(chosen, other), chosen, wrong_arcs(chosen, other)


def read_trees(path: str | os.PathLike[str], encoding: str = "utf-8") -> tuple[list[Sentence], str]:
    """The sentences of a CoNLL-X or CoNLL-U file, or of stdin for ``-``, and the name for messages."""
    if os.fspath(path) != STDIN:
        return read_conll(path, encoding=encoding, require_heads=False), os.fspath(path)
    stream = getattr(sys.stdin, "buffer", None)
    text = sys.stdin.read() if stream is None else decode(stream.read(), "<stdin>", encoding)
    return parse_conll(text, "<stdin>", require_heads=False), "<stdin>"


def write_svg(path: str | os.PathLike[str], svg: str) -> None:
    """Write the SVG atomically (see :func:`~egnlp.base.files.write_text_atomic`)."""
    write_text_atomic(path, svg)


def text_width(value: str) -> float:
    """The drawn width of a text in the words' font, estimated: wide East Asian characters count twice."""
    return CHAR_WIDTH * sum(2 if unicodedata.east_asian_width(char) in "WF" else 0 if unicodedata.combining(char)
                            else 1 for char in value)


def text(value: str) -> str:
    """A text as XML character data."""
    return escape(_xml_safe(value))


def _xml_safe(value: str) -> str:
    """The text with every character XML 1.0 cannot hold (or discourages) replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", value)


def _tags(sentence: Sentence) -> list[str]:
    """The tag shown under each word: CPOSTAG (CoNLL-U UPOS), else POSTAG (XPOS), '' when neither is set."""
    return [cpos if cpos != BLANK else pos if pos != BLANK else "" for cpos, pos in zip(sentence.cpos, sentence.pos)]


def show_command(file: str | os.PathLike[str], pred: str | os.PathLike[str] | None = None, *,
                 gold: str | os.PathLike[str] | None = None, sentence: int = 1,
                 out: str | os.PathLike[str] | None = None, encoding: str = "utf-8") -> tuple[str | None, str]:
    """What ``egnlp parser show`` does: draw, write ``out`` atomically (None or ``-``: return the SVG instead).

    ``FILE PRED`` and ``FILE --gold GOLD`` both draw gold above the prediction; one of the files may be
    ``-``, stdin.

    Returns:
        (the SVG when it goes to stdout, else None; one line for stderr).
    """
    if gold is not None:
        if pred is not None:
            raise CorpusError("give the gold file either first (GOLD PRED) or with --gold, not both")
        file, pred = gold, file
    svg, chosen, wrong = draw_files(file, pred, sentence=sentence, encoding=encoding)
    note = f"sentence {sentence} ({where(chosen)}, {len(chosen)} words)"
    if pred is not None:
        note += f": {len(wrong)} wrong arc{'s' if len(wrong) != 1 else ''}"
    if out is None or os.fspath(out) == STDIN:
        return svg, note
    write_svg(out, svg)
    return None, f"{note}; wrote {os.fspath(out)}"
