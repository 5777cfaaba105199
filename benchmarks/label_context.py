"""Whether the labeler's features of the tree around an arc add LAS: its templates left out by group.

Run from the project root (``NLTK_DATA`` and ``EGNLP_UD_DIR`` set)::

    python benchmarks/label_context.py                        # pt-bosque, nl-alpino, es, eu
    python benchmarks/label_context.py --data es --keep out/  # parsers kept in out/ and used again
    python benchmarks/label_context.py --write-docs           # the "labels" section of docs/results.md

The second-stage labeler (McDonald, Lerman and Pereira 2006; ``parser/labeler.py``) labels each arc of a
finished tree, so its templates (``features/arc_labels.py``) read the tree around the arc: the head of
the head (grandparent), the other children of the head (siblings, whether the modifier is the head's
nearest or farthest child, how many children the head has), the modifier's own children (their tags and
lemmas, how many), and the modifier's neighbours in the sentence. The first two are the context of a
second- and third-order parser's parts.

For each data set, ``egnlp parser train`` with its defaults trains the parser as a user gets it (UD
sets: ``--train`` the whole ``*-ud-test.conllu``; ``es``, ``eu``: ``--data NAME``), and its trees of the
evaluation file (UD: ``*-ud-dev.conllu``; ``es``, ``eu``: the test split) are kept. Then the labeler is
trained as ``parser train`` trains it (``egnlp.parser_training.train_labeler`` with its defaults, on the
gold trees of the same training sentences: ``es``, ``eu`` their train and dev splits) once with every
template and once without each group, and labels the parser's trees (LAS: head and label right; UD sets
on universal relations, as ``udeval``) and the gold trees (label accuracy with gold heads). A group is
left out by deleting its keys from every event: the layout of an event's keys is checked against the
count the kernel wrote, so a change of ``_arc_keys`` fails here instead of measuring something else.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import report
from procs import egnlp, log

DATA = ("pt-bosque", "nl-alpino", "es", "eu")
UD_FILES = {"pt-bosque": "pt_bosque-ud", "nl-alpino": "nl_alpino-ud"}
# groups of label templates (numbers of features/arc_labels.py's _arc_keys) and how to name them
GROUPS = {
    "grandparent": "gC.hC.mC",
    "siblings": "sC.mC and sL.mC per sibling, nearest/farthest, the head's child count",
    "children": "cC.mC, cL.mC, cL.cC.hC per child of m, m's child count, the FEATS of its outermost children",
    "neighbours": "(m-1)C.mC.hC, mC.(m+1)C.hC",
}
VARIANTS = (("every template", ()), ("no grandparent", ("grandparent",)), ("no siblings", ("siblings",)),
            ("no grandparent, no siblings", ("grandparent", "siblings")), ("no children of m", ("children",)),
            ("no tree context", ("grandparent", "siblings", "children", "neighbours")))
FIXED_BEFORE_CONTEXT = 23  # bias, 6 modifier and 5 head templates, 11 pair templates; then the grandparent


def event_groups(heads: list[int], feat_counts: np.ndarray) -> list[np.ndarray]:
    """For each word m of a sentence (heads[m - 1] its head, 0 the root), the group of every key of its
    event in ``_arc_keys``' order: -1 for the templates of no group, else an index into ``GROUPS``."""
    n = len(heads)
    kids = np.zeros(n + 1, dtype=np.int64)
    for h in heads:
        kids[h] += 1
    names = list(GROUPS)
    g, s, c, nb = (names.index(x) for x in ("grandparent", "siblings", "children", "neighbours"))
    out = []
    for m in range(1, n + 1):
        h = heads[m - 1]
        layout = ([-1] * FIXED_BEFORE_CONTEXT + [g, nb, nb] + [c] * (3 * kids[m]) + [c, c, c]
                  + [s] * (2 * (kids[h] - 1)) + [s, s] + [-1] * (3 * feat_counts[m] + feat_counts[h]))
        out.append(np.array(layout, dtype=np.int64))
    return out


def without(groups: tuple[str, ...], original):
    """``arc_label_keys`` with the keys of ``groups`` deleted from every event (all kept for none)."""
    from egnlp.features.arc_labels import LABEL_TEMPLATES_VERSION, feature_atoms

    drop = np.array([name in groups for name in GROUPS])

    def keys_of(sentences, encoded, heads_list, feats_memo=None, templates=LABEL_TEMPLATES_VERSION):
        if templates != LABEL_TEMPLATES_VERSION:
            sys.exit(f"label templates version {templates}: the layout here is that of {LABEL_TEMPLATES_VERSION}")
        ev_ptr, keys = original(sentences, encoded, heads_list, feats_memo, templates)
        if not groups:
            return ev_ptr, keys
        feat_ptr, _ = feature_atoms(sentences)
        counts = np.diff(feat_ptr)
        keep = np.ones(keys.shape[0], dtype=np.bool_)
        word, row = 0, 0
        for heads in heads_list:
            n = len(heads)
            for layout in event_groups(list(heads), counts[row:row + n + 1]):
                lo, hi = ev_ptr[word], ev_ptr[word + 1]
                if hi - lo != layout.shape[0]:
                    sys.exit(f"an event has {hi - lo} label keys where the layout here has {layout.shape[0]}: "
                             "features/arc_labels.py changed; update event_groups")
                keep[lo:hi] = ~((layout >= 0) & drop[np.maximum(layout, 0)])
                word += 1
            row += n + 1
        kept = np.concatenate([[0], np.cumsum(keep)])
        return kept[ev_ptr], keys[keep]

    return keys_of


def scores(gold, heads_list, labels_list, universal: bool) -> float:
    """LAS in % (head and label right), labels compared whole or on their universal part."""
    def norm(label: str) -> str:
        return label.split(":", 1)[0] if universal else label

    right = total = 0
    for sentence, heads, labels in zip(gold, heads_list, labels_list):
        for gh, gl, ph, pl in zip(sentence.heads, sentence.deprels, heads, labels):
            right += gh == ph and norm(gl) == norm(pl)
            total += 1
    return 100.0 * right / total


def run(name: str, keep: Path) -> list[list[str]]:
    import egnlp.parser.labeler as labeler_module
    import egnlp.parser_training as training_module
    from egnlp.corpora import read_conll
    from egnlp.corpora.datasets import load_dataset
    from egnlp.parser import Parser

    model = keep / f"label-context-{name}.npz"
    if name in UD_FILES:
        ud = Path(os.environ["EGNLP_UD_DIR"])
        train_file, eval_file = ud / f"{UD_FILES[name]}-test.conllu", ud / f"{UD_FILES[name]}-dev.conllu"
        train, gold = read_conll(train_file), read_conll(eval_file)
        source = ["--train", train_file]
    else:
        # the sentences `parser train --data NAME` trains on by default: train and dev splits
        train, gold = load_dataset(name, "train") + load_dataset(name, "dev"), load_dataset(name, "test")
        source = ["--data", name]
    if not model.exists():
        log(f"{name}: egnlp parser train {' '.join(map(str, source))}")
        egnlp("parser", "train", *source, "--out", model)
    parser = Parser.load(model)
    heads, _ = parser.predict(gold)
    featurizer = parser.featurizer
    encoded = featurizer.encode(gold)
    gold_heads = [s.heads for s in gold]
    original = labeler_module.arc_label_keys
    rows = []
    try:
        for variant, groups in VARIANTS:
            labeler_module.arc_label_keys = training_module.arc_label_keys = without(groups, original)
            start = time.process_time()
            labeler, _ = training_module.train_labeler(featurizer, train)
            seconds = time.process_time() - start
            las = scores(gold, heads, labeler.label(gold, encoded, heads), name in UD_FILES)
            with_gold = scores(gold, gold_heads, labeler.label(gold, encoded, gold_heads), name in UD_FILES)
            log(f"{name}: {variant}: LAS {las:.2f}, labels on gold trees {with_gold:.2f}, {seconds:.1f} CPU s")
            rows.append([f"`{name}`", variant, f"{las:.2f}", f"{with_gold:.2f}", f"{seconds:.1f}"])
    finally:
        labeler_module.arc_label_keys = training_module.arc_label_keys = original
    return rows


def summary(rows: list[list[str]]) -> str:
    """What every template gives over each group left out, in LAS points per data set: a line per group."""
    las = {(row[0], row[1]): float(row[2]) for row in rows}
    names = list(dict.fromkeys(row[0] for row in rows))
    lines = ["LAS with every template, less LAS with:", ""]
    for variant, _ in VARIANTS[1:]:
        gains = (f"{name.strip('`')} {las[name, 'every template'] - las[name, variant]:+.2f}" for name in names)
        lines.append(f"- {variant}: {', '.join(gains)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=",".join(DATA), help=f"data sets, comma-separated (default {','.join(DATA)})")
    ap.add_argument("--keep", type=Path, help="folder for the parsers (found ones are used again)")
    report.add_options(ap)
    opts = ap.parse_args(argv)
    names = [x.strip() for x in opts.data.split(",") if x.strip()]
    unknown = set(names) - set(DATA)
    if unknown:
        sys.exit(f"--data: unknown {', '.join(sorted(unknown))} (choose from {', '.join(DATA)})")
    with tempfile.TemporaryDirectory() as scratch:
        keep = opts.keep or Path(scratch)
        keep.mkdir(parents=True, exist_ok=True)
        rows = [row for name in names for row in run(name, keep.resolve())]
    verdict = summary(rows)
    table = report.markdown_table(["data set", "labeler templates", "LAS on the parser's trees",
                                   "labels on gold trees", "labeler train CPU s"], rows, "llrrr")
    groups = "; ".join(f"{name}: {what}" for name, what in GROUPS.items())
    body = report.wrap_prose(
        "The default parser's trees of each evaluation file (UD: `*-ud-dev.conllu`, trained on "
        "`*-ud-test.conllu`; `es`, `eu`: their test splits), labeled by the second-stage labeler trained with "
        "its defaults on the gold trees of the training sentences, with every template and with groups of "
        f"templates of the tree around the arc left out ({groups}). LAS in %, punctuation counted, UD sets on "
        "universal relations; labels on gold trees: label accuracy with the gold heads.") + "\n\n" + table + "\n\n" \
        + verdict + "\n"
    print(body)
    if opts.write_docs:
        report.write_section("labels", report.command_line(__file__, sys.argv[1:] if argv is None else argv), body)


if __name__ == "__main__":
    main()
