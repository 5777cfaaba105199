"""``egnlp demo`` (the README's first command): a parser and a POS tagger trained with the defaults, the test
split tagged and parsed, the scores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from egnlp.base.errors import CorpusError, SettingsError


def run_demo(data: str, tagger_data: str, out: Path, *, limit: int | None = None, passes: int | None = None,
             note: Callable[[str], None] = print, progress: Callable[[str, bool], object] | None = None
             ) -> list[tuple[str, str, str]]:
    """Train a parser on the treebank ``data`` (its train and dev splits, as ``parser train --data`` does) and
    a CRF POS tagger on ``tagger_data``, save both in ``out``, and score them on the test splits; when the
    tagger's test sentences are the parser's (wsj and ptb-pos), the parser also runs on the predicted tags.
    ``progress(label, has_dual)`` makes a training callback. Returns the rows (what, where, score)."""
    from egnlp.corpora import dataset_root, dataset_task, is_dataset, load_dataset
    from egnlp.parser import attachment_scores
    from egnlp.parser_training import train_parser
    from egnlp.tagger import tag_scores
    from egnlp.tagger_training import label_columns, train_tagger

    for name, task in ((data, "parse"), (tagger_data, "pos")):
        if not is_dataset(name):
            raise CorpusError(f"unknown data set '{name}'; see 'egnlp data list'")
        if dataset_task(name) != task:
            raise CorpusError(f"data set '{name}' is for the task '{dataset_task(name)}', not '{task}'")
    if limit is not None and limit < 1:
        raise SettingsError(f"--limit must be at least 1, not {limit}")
    options = {} if passes is None else {"max_passes": passes}
    out.mkdir(parents=True, exist_ok=True)
    train = (load_dataset(data, "train") + load_dataset(data, "dev"))[:limit]
    test = load_dataset(data, "test")
    note(f"parser data {data}: train and dev {len(train)}, test {len(test)} sentences")
    callbacks = [progress("parser: bcfw (averaged), max-margin", True)] if progress else []
    parser, _ = train_parser(train, None, root=dataset_root(data), callbacks=callbacks, data=data, **options)
    parser.save(out / "demo-parser.npz")
    t_train, t_dev, t_test = (load_dataset(tagger_data, split) for split in ("train", "dev", "test"))
    t_train = t_train[:limit]
    note(f"\ntagger data {tagger_data}: train {len(t_train)}, dev {len(t_dev)}, test {len(t_test)} sentences")
    callbacks = [progress("tagger: CRF, online EG, log-linear", True)] if progress else []
    tagger, _ = train_tagger(*label_columns(t_train)[:2], dev=label_columns(t_dev)[:2], callbacks=callbacks,
                             data=tagger_data, **options)
    tagger.save(out / "demo-tagger.npz")
    tags = tag_scores(t_test, tagger.tag_corpus(t_test), column="pos", train_vocab=tagger.vocabulary)
    gold_tags = attachment_scores(test, parser.parse_corpus(test))
    rows = [("parser", f"{data} test, gold POS",
             f"UAS {gold_tags['uas']:.2f}  (no punct. {gold_tags['uas_nopunct']:.2f})"),
            ("tagger", f"{tagger_data} test", f"accuracy {tags['accuracy']:.2f}  "
                                               f"(unknown words {tags['unknown_accuracy']:.2f})")]
    if [s.forms for s in t_test] == [s.forms for s in test]:
        auto = attachment_scores(test, parser.parse_corpus(tagger.tag_corpus(test)))
        rows.append(("tagger + parser", f"{data} test, predicted POS",
                     f"UAS {auto['uas']:.2f}  (no punct. {auto['uas_nopunct']:.2f})"))
    return rows
