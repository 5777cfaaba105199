"""Labeled attachment scores of egnlp's parser against the reference parsers, with the commands a user runs.

Run from the project root (NLTK_DATA and EGNLP_UD_DIR must point at the corpora)::

    python benchmarks/parser_accuracy.py                      # every run below
    python benchmarks/parser_accuracy.py --runs nl-alpino:auto --passes 5   # a quick check

Each run is ``egnlp parser train`` with the settings of the row, then
``egnlp parser parse`` on the evaluation file and ``egnlp parser evaluate
--json`` (UAS, LAS; punctuation counted); on the UD sets also ``udeval``
(the CoNLL 2018 scorer: UAS and LAS on universal relations) and
``udvalidate --level 2`` (the official validator) on the output.  A
first-order model's evaluation file is parsed a second time with
``--no-prune`` (every arc decoded; the default prunes), and scored the same;
its column "arcs pruned" is the share of the candidate arcs that pruning
rules out.

- ``es``, ``eu``: the data set's train and dev splits (``--data NAME``
  trains on both by default), evaluated on its test split
  (``egnlp data export NAME test``).
- ``pt-bosque``, ``nl-alpino``: trained on the whole ``*-ud-test.conllu``
  file and evaluated on ``*-ud-dev.conllu``, as the reference parsers were
  (only those two files are public here; settings were chosen on the last
  10% of the ``-test`` file, the data sets' dev split).

A run is ``NAME:TREE`` (the default model: first order), or ``NAME:TREE:PARTS``
with PARTS ``siblings`` or ``grandparents`` (``--parts siblings --no-cascade``,
``--parts grandparents --no-cascade``: unpruned), ``siblings:cascade`` or
``grandparents:cascade`` (``--parts siblings``, ``--parts grandparents``:
pruned by a first-order cascade); TREE is one of ``default``
(no ``--tree`` option: projective), ``projective``, ``non-projective`` or
``auto``. A pruned run's row records the cascade's threshold and top-k, and the
share of the gold arcs (the pruner's oracle recall) and of all arcs that its
masks keep on the tuning split, as the model records them (``egnlp model
info``), and on the evaluation file (``Parser.kept_arcs``); a table of its own
shows them. For ``eu`` the root is ``multi`` (the data set's).  The quoted reference figures are those of the
project's issue tracker: MSTParser (first order, projective and
non-projective) and UDPipe 1 (10 iterations), on the same files with gold
tags.  Files go to ``--out`` (default ``runs/parser_accuracy``); the table
goes to stdout and ``parser_accuracy.md``.

``--udpipe`` measures UDPipe 1 (``ufal.udpipe``, installed by hand) side by
side on each data set of the runs: its parser alone, trained with its
defaults on the same training sentences with gold tags (``udpipe1.py``:
kept in ``--keep DIR`` and used again), parsing the same evaluation file with
its gold tags, scored by the same tools (``udeval`` on the UD sets, ``egnlp
parser evaluate`` on the CoNLL-X sets, which UDPipe reads converted to
CoNLL-U: columns 9 and 10 blanked). ``--write-docs`` writes the tables into
the ``parsing`` section of ``docs/results.md``: a headline table (egnlp,
UDPipe 1 measured, MSTParser quoted, training CPU seconds) and the detailed
table below it.

``--reuse`` does not train a run whose ``model.npz`` is in ``--out`` already:
it is parsed and scored again, and its training figures (CPU and wall seconds,
peak RSS, the tree space it chose) are those that ``parser_accuracy.json`` in
``--out`` records of it (the run is refused when that file has none).

    python benchmarks/parser_accuracy.py --runs es:default,pt-bosque:default --udpipe --keep /tmp/keep
    python benchmarks/parser_accuracy.py --runs es:default --reuse --write-docs   # es's model not trained again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import report
import udpipe1
from procs import EGNLP, log
from procs import run as run_child

ROOT = Path(__file__).resolve().parents[1]
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
BIN = Path(sys.executable).parent
RUNS = ("es:default", "es:projective:grandparents:cascade", "eu:default", "eu:non-projective:grandparents:cascade",
        "pt-bosque:default", "pt-bosque:projective:grandparents:cascade", "nl-alpino:default",
        "nl-alpino:projective:grandparents:cascade")
# The options of a run's PARTS, and whether its model is pruned by a cascade
PARTS = {(): ([], False), ("siblings",): (["--parts", "siblings", "--no-cascade"], False),
         ("grandparents",): (["--parts", "grandparents", "--no-cascade"], False),
         ("siblings", "cascade"): (["--parts", "siblings"], True),
         ("grandparents", "cascade"): (["--parts", "grandparents"], True)}
UD_FILES = {"pt-bosque": ("pt_bosque-ud", "pt"), "nl-alpino": ("nl_alpino-ud", "nl")}
# (UAS, LAS) of the reference parsers on the same evaluation files (LAS on universal relations for UD)
REFERENCES = {
    "es": {"MSTParser": (81.48, 77.90)},
    "wsj": {"MSTParser": (88.68, None)},
    "eu": {"MSTParser": (78.28, 69.25), "UDPipe 1": (76.95, 69.83)},
    "pt-bosque": {"MSTParser proj.": (82.72, 78.11), "MSTParser non-proj.": (82.05, 77.48),
                  "UDPipe 1": (85.50, 82.14)},
    "nl-alpino": {"MSTParser proj.": (81.06, 72.88), "MSTParser non-proj.": (79.96, 72.12),
                  "UDPipe 1": (81.77, 76.53)},
}


# What a run's row takes from its training (--reuse: from the previous run's record)
TRAINING_FIELDS = ("train_seconds", "train_cpu", "train_peak_mb", "space")
RECORD = "parser_accuracy.json"  # the rows of the last run, in --out


# The MSTParser figure quoted in the headline table: first order, projective (UAS, LAS).
MSTPARSER_PROJECTIVE = {"es": "MSTParser", "wsj": "MSTParser", "eu": "MSTParser", "pt-bosque": "MSTParser proj.",
                        "nl-alpino": "MSTParser proj."}


def egnlp(*args: object):
    """``egnlp ARGS`` in a child process (:func:`procs.run`: stdout, stderr, wall, CPU seconds, peak RSS)."""
    return run_child([EGNLP, *args])


def run_one(spec: str, out: Path, passes: int | None, trainer: str | None = None,
            recorded: dict[str, dict] | None = None) -> dict:
    """One run's row: trained (unless ``recorded``, the previous rows by run, is given and the model file exists:
    then its training figures are the recorded ones), parsed and scored."""
    name, tree, *extra = spec.split(":")
    if tuple(extra) not in PARTS:
        sys.exit(f"run {spec!r}: expected NAME:TREE or NAME:TREE:PARTS, PARTS one of "
                 f"{', '.join(':'.join(k) for k in PARTS if k)}")
    flags, pruned = PARTS[tuple(extra)]
    folder = out / spec.replace(":", "-")
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "model.npz"
    pred = folder / ("pred.conllu" if name in UD_FILES else "pred.conll")  # the format of the gold file
    if name in UD_FILES:
        prefix, lang = UD_FILES[name]
        ud = Path(os.environ["EGNLP_UD_DIR"])
        source, gold = ["--train", ud / f"{prefix}-test.conllu"], ud / f"{prefix}-dev.conllu"
    else:
        source, gold, lang = ["--data", name], folder / "gold.conll", None
        egnlp("data", "export", name, "test", "-o", gold)
    options = ([] if tree == "default" else ["--tree", tree]) + (["--passes", passes] if passes else []) \
        + (["--trainer", trainer] if trainer else []) + flags
    training = trained_model(spec, model, [*source, *options], recorded)
    egnlp("parser", "parse", model, gold, "-o", pred)
    row = {"run": spec, "data": name, "tree": tree, "flags": flags, "arcs": not extra, **training,
           **scored(gold, pred, lang)}
    if lang is not None:
        checked = subprocess.run([str(BIN / "udvalidate"), "--level", "2", "--lang", lang, str(pred)],
                                 capture_output=True, text=True)
        row["valid"] = checked.returncode == 0
    if row["arcs"]:  # a first-order model: decoded over every arc too (the default prunes)
        exact = pred.with_name("every-arc" + pred.suffix)
        egnlp("parser", "parse", model, gold, "-o", exact, "--no-prune")
        row["every_arc"] = scored(gold, exact, lang)
        row["pruned_share"] = pruned_share(model, gold)
    if pruned:
        row["cascade"] = cascade_figures(model, gold)
    log(f"{spec}: {row}")
    return row


def trained_model(spec: str, model: Path, options: list, recorded: dict[str, dict] | None) -> dict:
    """``egnlp parser train OPTIONS --out MODEL`` for run ``spec``, and its figures (:data:`TRAINING_FIELDS`), with
    ``reused`` False; or with ``recorded`` (``--reuse``: the previous run's rows by run) and ``model`` there
    already, nothing trained: the figures recorded of the run, with ``reused`` True (exit when none are)."""
    if recorded is not None and model.exists():
        row = recorded.get(spec, {})
        missing = [field for field in TRAINING_FIELDS if field not in row]
        if missing:
            sys.exit(f"--reuse: {model} exists, but {RECORD} beside its folder records no {', '.join(missing)} of "
                     f"run {spec}: run without --reuse (or remove the model) to train it again")
        log(f"{spec}: {model} reused, not trained again")
        return {**{field: row[field] for field in TRAINING_FIELDS}, "reused": True}
    log(f"{spec}: egnlp parser train {' '.join(map(str, options))}")
    trained = egnlp("parser", "train", *options, "--out", model)
    return {"train_seconds": trained.wall, "train_cpu": trained.cpu, "train_peak_mb": trained.peak_mb,
            "space": re.search(r"; (\S+) trees", trained.stderr).group(1), "reused": False}


def recorded_rows(out: Path) -> dict[str, dict]:
    """The rows of the previous run's record in ``out`` by run (none when there is no record)."""
    path = out / RECORD
    if not path.exists():
        return {}
    return {row["run"]: row for row in json.loads(path.read_text(encoding="utf-8"))["egnlp"]}


def cascade_figures(model: Path, gold: Path) -> dict:
    """A cascade's threshold and top-k, and what its first stage keeps (the share of the gold arcs: its oracle
    recall; the share of all arcs) of the tuning split, as the model records them (``egnlp model info``), and
    of the evaluation file ``gold`` (:meth:`~egnlp.parser.Parser.kept_arcs`, the masks the parser decodes
    over)."""
    from egnlp.corpora import read_conll
    from egnlp.model_info import model_info
    from egnlp.parser.parser_model import Parser

    training = model_info(model)["training"]
    record = training["cascade"]
    kept = Parser.load(model).kept_arcs(read_conll(gold))
    return {"threshold": record["threshold"], "top_k": record["top_k"],
            "target": (training["settings"] or {}).get("cascade_recall"),
            "tuning_sentences": record["tuning_sentences"], "tuning_recall": record["tuning_recall"],
            "tuning_kept": record["tuning_kept"], "eval_recall": kept.recall, "eval_kept": kept.kept_share,
            "eval_gold_arcs": kept.gold}


def pruned_share(model: Path, gold: Path) -> float:
    """The share of the n^2 candidate arcs of ``gold``'s sentences that the model's pruning rules out."""
    import numpy as np

    from egnlp.corpora import read_conll
    from egnlp.parser.parser_model import Parser

    parser = Parser.load(model)
    sentences = read_conll(gold)
    featurizer = parser.featurizer
    encoded = featurizer.encode(sentences)
    arcs = featurizer.block_arc_scores(encoded, parser.weights[:featurizer.n_features], prune=True)
    pruned = sum(int(np.isneginf(arc).sum()) for arc in arcs)
    return pruned / sum(len(s) ** 2 for s in sentences)


def scored(gold: Path, pred: Path, lang: str | None) -> dict:
    """UAS and LAS of ``pred`` by ``parser evaluate``, and for the UD sets by ``udeval`` too."""
    scores = json.loads(egnlp("parser", "evaluate", gold, pred, "--json").stdout)
    row = {"uas": scores["uas"], "las": scores["las"], "las_universal": scores["las_universal"]}
    if lang is not None:
        printed = subprocess.run([str(BIN / "udeval"), "-v", str(gold), str(pred)], capture_output=True,
                                 text=True, check=True).stdout
        for line in printed.splitlines():
            metric = line.split("|")[0].strip()
            if metric in ("UAS", "LAS"):
                row[f"udeval_{metric.lower()}"] = float(line.split("|")[3])
    return row


def conllx_to_conllu(text: str, root_label: str | None = None) -> str:
    """CoNLL-X sentences as CoNLL-U for UDPipe: the first eight columns kept, PHEAD and PDEPREL blanked, DEPREL
    ``_`` (which UDPipe takes for a missing label) written ``dep``; with ``root_label`` every word whose HEAD is 0
    gets that DEPREL (UDPipe's single-root parser wants ``root``)."""
    lines = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 10:
            fields = fields[:8] + ["_", "_"]
            if fields[7] == "_":
                fields[7] = "dep"
            if root_label is not None and fields[6] == "0":
                fields[7] = root_label
            line = "\t".join(fields)
        lines.append(line)
    return "\n".join(lines).rstrip("\n") + "\n\n"


def multi_root(conllu: str) -> bool:
    """Whether some sentence has more than one word whose HEAD is 0."""
    return any(sum(1 for line in block.splitlines() if line.split("\t")[6:7] == ["0"]) > 1
               for block in conllu.split("\n\n"))


def udpipe_scores(name: str, folder: Path, keep: Path) -> dict:
    """UDPipe 1's parser alone, trained with its defaults on ``name``'s training sentences with gold tags, parsing
    the evaluation file with its gold tags: UAS and LAS scored as egnlp's, training and parsing CPU seconds.

    On the CoNLL-X sets: a single-root set's root words get DEPREL ``root`` in UDPipe's training and gold files
    (``es``: ``ROOT`` renamed, ``wsj``: ``_``), a multi-root one (``eu``) trains with ``single_root=0``; DEPREL ``_``
    becomes ``dep`` (``es`` has many, ``wsj`` only those). Neither label is one of those sets' own, so LAS counts
    the same arcs as on the original labels.
    """
    folder.mkdir(parents=True, exist_ok=True)
    options = udpipe1.PARSER_ONLY
    if name in UD_FILES:
        prefix, lang = UD_FILES[name]
        ud = Path(os.environ["EGNLP_UD_DIR"])
        train_file, gold = ud / f"{prefix}-test.conllu", ud / f"{prefix}-dev.conllu"
        model_name = f"parser-{prefix.removesuffix('-ud')}"
    else:  # the sentences `parser train --data NAME` trains on (train and dev), converted
        lang, model_name = None, f"parser-{name}"
        train_file, gold = folder / "udpipe-train.conllu", folder / "udpipe-gold.conllu"
        exported = {split: egnlp("data", "export", name, split).stdout for split in ("train", "dev", "test")}
        several = multi_root(exported["train"] + "\n\n" + exported["dev"])
        root_label = None if several else "root"
        if several:
            options = options[:2] + ("single_root=0",)
        train_file.write_text(conllx_to_conllu(exported["train"], root_label)
                              + conllx_to_conllu(exported["dev"], root_label), encoding="utf-8")
        gold.write_text(conllx_to_conllu(exported["test"], root_label), encoding="utf-8")
    trained = udpipe1.train(model_name, train_file, options, keep)
    pred = folder / "udpipe-pred.conllu"
    parsed = udpipe1.process(trained.path, gold, pred)
    return {**scored(gold, pred, lang), "train_cpu": trained.cpu, "parse_cpu": parsed.cpu,
            "options": udpipe1.describe(options)}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _uas_las(scores: dict | None, labeled: bool = True) -> str:
    if scores is None:
        return ""
    las = scores.get("udeval_las", scores["las"]) if labeled else None
    return f"{scores.get('udeval_uas', scores['uas']):.2f} / {_pct(las)}"


def _quoted(data: str, who: str | None = None) -> str:
    refs = REFERENCES.get(data, {})
    pairs = [(w, refs[w]) for w in ([who] if who else refs) if w in refs]
    return "; ".join(f"{'' if who else w + ' '}{u:.2f} / {_pct(v)}" for w, (u, v) in pairs)


def run_label(row: dict) -> str:
    if row["tree"] == "default" and not row["flags"]:
        return "defaults"
    return " ".join(([] if row["tree"] == "default" else [f"--tree {row['tree']}"]) + row["flags"])


def headline(rows: list[dict], udpipe: dict[str, dict]) -> str:
    """egnlp against UDPipe 1 (measured) and MSTParser (quoted), one row a run."""
    out = []
    for row in rows:
        data, theirs = row["data"], udpipe.get(row["data"])
        labeled = row["las"] is not None
        evaluated = "dev file" if data in UD_FILES else "test split"
        cpu = f"{row['train_cpu']:,.0f}" + ("" if theirs is None else f" / {theirs['train_cpu']:,.0f}")
        out.append([f"`{data}` {evaluated}", f"`{run_label(row)}`", _uas_las(row, labeled),
                    _uas_las(theirs, labeled) or "not measured", _quoted(data, MSTPARSER_PROJECTIVE.get(data)),
                    cpu])
    return report.markdown_table(["data set", "egnlp run", "egnlp UAS / LAS", "UDPipe 1 UAS / LAS (measured)",
                                  "MSTParser UAS / LAS (quoted)", "train CPU s egnlp / UDPipe 1"], out, "llrrrr")


def table(rows: list[dict], udpipe: dict[str, dict] | None = None) -> str:
    udpipe = udpipe or {}
    lines = ["| data | egnlp run | tree space | UAS | LAS | every arc (`--no-prune`) | arcs pruned "
             "| train CPU s | peak MB | UDPipe 1 (measured) | references (quoted) UAS / LAS |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        uas = row.get("udeval_uas", row["uas"])
        las = row.get("udeval_las", row["las"])
        exact = row.get("every_arc")
        every = "" if exact is None else (f"{exact.get('udeval_uas', exact['uas']):.2f} / "
                                          f"{_pct(exact.get('udeval_las', exact['las']))}")
        theirs = _uas_las(udpipe.get(row["data"]), row["las"] is not None)
        refs = "; ".join(f"{who} {u:.2f} / {_pct(v)}" for who, (u, v) in REFERENCES.get(row["data"], {}).items()
                         if not (theirs and who == "UDPipe 1"))  # a measured UDPipe 1 replaces the quoted one
        valid = "" if "valid" not in row else (" (udvalidate: valid)" if row["valid"] else " (udvalidate: INVALID)")
        run = run_label(row)
        share = f"{100 * row['pruned_share']:.0f}%" if "pruned_share" in row else ""
        lines.append(f"| {row['data']} | `{run}` | {row['space']} | {uas:.2f} | {_pct(las)}{valid} | {every} "
                     f"| {share} | {row['train_cpu']:,.0f} | {row['train_peak_mb']:,.0f} | {theirs} | {refs} |")
    return "\n".join(lines)


def cascade_table(rows: list[dict]) -> str:
    """The cascade runs' first stages: the threshold and top-k, and the shares of the gold arcs and of all arcs
    that their masks keep of the tuning split and of the evaluation file (in %); empty without a cascade run."""
    out = [[row["data"], f"`{run_label(row)}`", _percent(c.get("target"), 1), f"{c['threshold']:g}", str(c["top_k"]),
            _percent(c["tuning_recall"]), _percent(c["tuning_kept"], 1), _percent(c["eval_recall"]),
            _percent(c["eval_kept"], 1)]
           for row in rows if (c := row.get("cascade")) is not None]
    if not out:
        return ""
    return report.markdown_table(["data", "egnlp run", "recall sought", "threshold", "top-k",
                                  "tuning: gold arcs kept", "tuning: arcs kept", "evaluation file: gold arcs kept",
                                  "evaluation file: arcs kept"], out, "llrrrrrrr")


def _percent(share: float | None, digits: int = 2) -> str:
    return "n/a" if share is None else f"{100 * share:.{digits}f}"


CASCADE_NOTE = ("Cascades (a higher-order model's default, `--no-cascade` turns it off; Koo and Collins 2010, "
                "Sec. 5; Rush and Petrov 2012): the first-order pruner keeps the heads of a "
                "word whose max-marginal is at least the threshold times the best head's, top-k of them at most. The "
                "threshold is chosen on the tuning split (the training file's last tenth, which the pruner is not "
                "trained on), not on the evaluation file: the largest that keeps the recall sought "
                "(`--cascade-recall`) of its gold arcs, or the largest with the best recall when top-k caps it "
                "below. In %: the gold arcs kept (the pruner's oracle recall) and the arcs kept of the n² of each "
                "sentence, on the tuning split (the model's record, `egnlp model info`) and on the evaluation file "
                "(the test split, or the UD dev file; `Parser.kept_arcs`: the masks the higher-order model decodes "
                "over).")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated NAME:TREE (default: {','.join(RUNS)})")
    ap.add_argument("--passes", type=int, help="pass limit of every training run (default: the trainer's)")
    ap.add_argument("--trainer", help="trainer of every training run (default: the parser's, bcfw)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "parser_accuracy", help="output folder")
    ap.add_argument("--udpipe", action="store_true",
                    help="also train and score UDPipe 1's parser on each data set of the runs (needs ufal.udpipe)")
    ap.add_argument("--keep", type=Path, help="folder that keeps the trained UDPipe 1 models for later runs "
                                              "(default: a temporary one)")
    ap.add_argument("--reuse", action="store_true",
                    help=f"do not train a run whose model.npz is in --out already; its training figures are those "
                         f"{RECORD} in --out records of it")
    report.add_options(ap)
    args = ap.parse_args(argv)
    run_info = report.provenance()
    command = report.command_line(__file__, sys.argv[1:] if argv is None else argv)
    if args.udpipe and udpipe1.version() is None:
        sys.exit("--udpipe: UDPipe 1's Python package is missing here (pip install ufal.udpipe)")
    recorded = recorded_rows(args.out) if args.reuse else None
    rows = [run_one(spec.strip(), args.out, args.passes, args.trainer, recorded) for spec in args.runs.split(",")
            if spec.strip()]
    udpipe: dict[str, dict] = {}
    if args.udpipe:
        with tempfile.TemporaryDirectory() as tmp:
            for data in dict.fromkeys(row["data"] for row in rows):
                udpipe[data] = udpipe_scores(data, args.out / f"udpipe-{data}", args.keep or Path(tmp))
                log(f"UDPipe 1 on {data}: {udpipe[data]}")
    text = table(rows, udpipe)
    cascades = cascade_table(rows)
    if cascades:
        text += "\n\n" + CASCADE_NOTE + "\n\n" + cascades
    print(text)
    (args.out / "parser_accuracy.md").write_text(text + "\n", encoding="utf-8")
    (args.out / RECORD).write_text(json.dumps({"egnlp": rows, "udpipe1": udpipe}, indent=2) + "\n",
                                   encoding="utf-8")
    if args.write_docs:
        body = docs_intro(args, udpipe) + "\n\n" + headline(rows, udpipe)
        details = ("Details: the tree space the run chose, LAS with `udvalidate --level 2` on the UD output, "
                   "the same model decoding every arc (`--no-prune`), the share of candidate arcs pruning leaves "
                   "out, training CPU seconds and peak RSS of `egnlp parser train`.\n\n" + text)
        for path in report.write_section("parsing", command, body, details=details, run=run_info):
            log(f"wrote section parsing of {path.relative_to(ROOT)}")


def docs_intro(args: argparse.Namespace, udpipe: dict[str, dict]) -> str:
    """What the parsing tables measure, for the section."""
    text = ("egnlp: `egnlp parser train` with the defaults"
            + (f" and `--passes {args.passes}`" if args.passes else "")
            + (f" and `--trainer {args.trainer}`" if args.trainer else "")
            + " (averaged BCFW; `es`, `eu`, `wsj`: `--data NAME`, its train and dev splits; UD sets: `--train` "
            "the whole `*-ud-test.conllu`), then `egnlp parser parse` of the evaluation file with gold tags. "
            "Scores in %, punctuation counted: `udeval` (CoNLL 2018 scorer, LAS on universal relations) on the "
            "UD dev files, `egnlp parser evaluate` on the test splits (`wsj` has no labels).")
    if udpipe:
        text += (f" UDPipe 1 ({udpipe1.version()}, `ufal.udpipe`), measured here: its parser alone, trained with "
                 "its default options (10 iterations) on the same sentences with gold tags, parsing the same file "
                 "with gold tags, scored by the same tool. It reads the CoNLL-X sets converted to CoNLL-U: PHEAD "
                 "and PDEPREL blanked, the label `_` written `dep`, the root words of the single-root sets (`es`, "
                 "`wsj`) labelled `root` in its training and gold files, and `single_root=0` for the multi-root "
                 "`eu`.")
    text += (" MSTParser figures are quoted, not measured here: first-order projective MSTParser on the same "
             "training and evaluation files with gold tags, as the project's issue tracker reports them. "
             "Training CPU seconds are user + system of the whole command (`os.wait4`), on a machine shared "
             "with other jobs.")
    if args.reuse:
        text += (" With `--reuse` the models already in the output folder were not trained again: they were "
                 "parsed and scored afresh, and their training figures (CPU seconds, peak RSS, tree space) are "
                 "those of the run that trained them.")
    return text


if __name__ == "__main__":
    main()
