"""What a model file holds: ``egnlp model info FILE [--json]``.

:func:`model_info` loads a parser or a tagger file (every check of
:mod:`egnlp.base.files` and of the model's loader applies, so a damaged
file is an error, not a report) and describes it as a JSON-ready dict: the
kind and format version, what the model predicts (tree space and arc labels;
tag column and tag set), its features, and what its metadata records of its
training (data, trainer and settings, final primal, dual and duality gap).
:func:`format_info` renders that dict for people.

Models written before the training data and settings were recorded load as
well; what they do not record is left out (None in JSON).
"""

from __future__ import annotations

import math
import os
from typing import Any

from egnlp.base.files import ModelError
from egnlp.features.grandparents import GRAND_TEMPLATES_VERSION
from egnlp.features.siblings import SIBLING_TEMPLATES_VERSION
from egnlp.parser import parser_model
from egnlp.parser.cascade import MARGINALS
from egnlp.parser.parser_model import Parser
from egnlp.tagger import lemmatizer, tagger_model
from egnlp.tagger.lemmatizer import Lemmatizer
from egnlp.tagger.tagger_model import Tagger

__all__ = ["format_info", "load_model", "model_info"]

KINDS = {parser_model.MODEL_KIND: "parser", tagger_model.MODEL_KIND: "tagger", lemmatizer.MODEL_KIND: "lemmatizer"}
# What the parser's tag-column setting means.
TAG_COLUMNS = {"both": "UPOS (CPOSTAG) and XPOS (POSTAG)", "upos": "UPOS (CPOSTAG) only",
               "xpos": "XPOS (POSTAG), the coarse tag its first character"}
FINAL_FIELDS = ("passes", "eff_iters", "seconds", "C", "primal", "dual", "gap", "rel_gap", "grad_norm", "dev")


def _other_kind(error: ModelError) -> bool:
    """Whether a loader refused the file only because it holds another kind of model."""
    return "expected a model of kind" in str(error)


def load_model(path: str | os.PathLike[str]) -> Any:
    """The parser, tagger, lemmatizer or pipeline of a model file, whichever it holds.

    Raises:
        ModelError: a missing, unreadable or damaged file, or one that holds no egnlp model.
    """
    from egnlp.pipeline import Pipeline

    errors = []
    for load in (Parser.load, Tagger.load, Lemmatizer.load, Pipeline.load):
        try:
            return load(path)
        except ModelError as exc:
            if not _other_kind(exc):
                raise
            errors.append(exc)
    found = str(errors[-1]).rpartition("found ")[2]
    raise ModelError(f"{path}: not an egnlp parser, tagger, lemmatizer or pipeline model (its kind is "
                     f"{found})") from None


def model_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON-ready description of the model in ``path`` (see the module docstring).

    Raises:
        ModelError: as :func:`load_model`.
    """
    from egnlp.pipeline import COLUMN_NAMES, PIPELINE_VERSION, Pipeline

    model = load_model(path)
    head = {"file": str(path), "bytes": os.path.getsize(path)}
    if not isinstance(model, Pipeline):
        return _finite({**head, **_model_part(model)})
    stages = {f"{COLUMN_NAMES[column]} tagger": _model_part(tagger) for column, tagger in model.taggers.items()}
    stages.update((name, _model_part(stage)) for name, stage in (("lemmatizer", model.lemmatizer),
                                                                  ("parser", model.parser)) if stage is not None)
    components = [name for name, stage in (("tokenizer", model.tokenizer), ("multiword tokens", model.multiword))
                  if stage is not None] + list(stages)
    return _finite({**head, "kind": "pipeline", "format_version": PIPELINE_VERSION, "language": model.language,
                    "components": components, "training": model.info, "stages": stages})


def _model_part(model: Parser | Tagger | Lemmatizer) -> dict[str, Any]:
    """The description of one parser, tagger or lemmatizer (a model file's, or a pipeline stage's)."""
    if isinstance(model, Lemmatizer):
        return _lemmatizer_part(model)
    if isinstance(model, Parser):
        out = {"kind": "parser", "format_version": parser_model.FORMAT_VERSION, **_parser_part(model)}
    else:
        out = {"kind": "tagger", "format_version": tagger_model.FORMAT_VERSION, **_tagger_part(model)}
    out["training"] = _training_part(model.info)
    return out


def _parser_part(parser: Parser) -> dict[str, Any]:
    config = parser.featurizer.config()
    labeler = parser.labeler
    siblings = parser.siblings
    grand = parser.grand
    return {
        "tree": parser.tree,
        "root": parser.root,
        "final_on_root": parser.final_on_root,
        "order": parser.order,
        "tag_columns": config["tags"],
        "features": {"count": int(parser.weights.size), "mode": config["mode"],
                     "hash_bits": config["hash_bits"] or None, "use_lemma": config["use_lemma"],
                     "use_feats": config["use_feats"], "templates": config["templates"],
                     "sibling_count": siblings.n_features if siblings is not None else None,
                     "sibling_templates": SIBLING_TEMPLATES_VERSION if siblings is not None else None,
                     "grand_count": grand.n_features if grand is not None else None,
                     "grand_templates": GRAND_TEMPLATES_VERSION if grand is not None else None},
        "labels": list(labeler.labels) if labeler is not None else None,
        "labeler_features": int(labeler.weights.size) if labeler is not None else None,
        "labeler_templates": labeler.templates if labeler is not None else None,
    }


def _lemmatizer_part(model: Lemmatizer) -> dict[str, Any]:
    info = model.info
    classifier = _dict(info.get("classifier"))
    return {"kind": "lemmatizer", "format_version": lemmatizer.FORMAT_VERSION, "columns": list(model.columns),
            "form_backoff": model.form_backoff, "known_ratio": model.known_ratio,
            "dictionary_keys": len(model.dictionary),
            "scripts": len(model.scripts), "whole_scripts": sum(s.whole is not None for s in model.scripts),
            "features": {"count": int(model.weights.size), "predicates": len(model.predicates)},
            "training": {"data": info.get("data"), "train_sentences": info.get("train_sentences"),
                         "train_words": info.get("train_words"),
                         "settings": info.get("settings") if isinstance(info.get("settings"), dict) else None,
                         "classifier": classifier or None, "cpu_seconds": info.get("cpu_seconds"),
                         "dev_accuracy": info.get("dev_accuracy")}}


def _lemmatizer_rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    training = info["training"]
    classifier = training["classifier"] or {}
    rows = [("kind", f"lemmatizer, format version {info['format_version']}"),
            ("reads", "FORM, " + ", ".join(c.upper() for c in info["columns"])),
            ("dictionary", f"{_number(info['dictionary_keys'])} keys; form back-off "
             f"{_number(info['form_backoff'])}"),
            ("edit scripts", f"{_number(info['scripts'])} in the classifier ({_number(info['whole_scripts'])} "
             f"whole lemmas) of the {_number(classifier.get('scripts'))} of rare training words; a training "
             f"lemma preferred down to {_number(info['known_ratio'])} of the best's probability"),
            ("features", f"{_number(info['features']['count'])} ({_number(info['features']['predicates'])} "
             "predicates)"),
            ("training data", f"{training['data'] or 'not recorded'} ({_number(training['train_sentences'])} "
             f"sentences, {_number(training['train_words'])} words)"),
            ("trainer", f"cd: C={_number(classifier.get('C'))}, {_number(classifier.get('passes'))} passes, "
             f"{_number(classifier.get('events'))} events, "
             + {True: "converged", False: "stopped before converging"}.get(classifier.get("converged"), "")),
            ("cpu seconds", _number(training["cpu_seconds"]))]
    if training["settings"]:
        rows.append(("settings", ", ".join(f"{key}={_number(value)}" for key, value in training["settings"].items())))
    if training["dev_accuracy"] is not None:
        rows.append(("dev accuracy", f"{training['dev_accuracy']:.2f}%"))
    return rows


def _tagger_part(tagger: Tagger) -> dict[str, Any]:
    inner = tagger.model
    featurizer = getattr(inner, "featurizer", None)
    predicates = getattr(featurizer, "predicates", None) or getattr(inner, "predicates", None)
    return {
        "model": tagger.kind,
        "column": tagger.column,
        "reads_pos": tagger.use_pos,
        "tags": tagger.labels,
        "features": {"count": int(inner.weights.size),
                     "predicates": len(predicates) if predicates is not None else None},
        "vocabulary": len(tagger.vocabulary) if tagger.vocabulary is not None else None,
        "beam": getattr(inner, "beam", None),
        "all_transitions": getattr(featurizer, "all_transitions", None),
    }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _training_part(info: dict[str, Any]) -> dict[str, Any]:
    """What the metadata's ``info`` records of the training run (keys it lacks become None)."""
    data = _dict(info.get("data"))
    final = _dict(info.get("final"))
    out = {
        "trainer": info.get("trainer"),
        "data": {
            "name": data.get("name"),
            "sources": data.get("sources"),
            "more_sources": data.get("more_sources"),
            "train_sentences": info.get("train_sentences", data.get("train_sentences")),
            "train_tokens": info.get("train_tokens", data.get("train_tokens")),
            "dev_sentences": data.get("dev_sentences"),
        },
        "config": info.get("config") if isinstance(info.get("config"), dict) else None,
        "settings": info.get("settings") if isinstance(info.get("settings"), dict) else None,
        "converged": info.get("converged"),
        "final": {name: final.get(name) for name in FINAL_FIELDS} if final else None,
        "seconds": {"extract": info.get("extract_seconds"), "train": info.get("train_seconds")},
    }
    for extra in ("sigma2", "cutoff", "C_path"):
        if extra in info:
            out[extra] = info[extra]
    choice = _dict(info.get("tree_choice"))
    if choice:
        uas = _dict(choice.get("uas"))
        out["tree_choice"] = {"chosen": choice.get("chosen"), "tuning_sentences": choice.get("tuning_sentences"),
                              "uas": {name: uas.get(name) for name in ("projective", "non-projective")},
                              "seconds": choice.get("seconds")}
    cascade = _dict(info.get("cascade"))
    if cascade:
        out["cascade"] = _cascade_part(cascade)
    labeler = _dict(info.get("labeler"))
    if labeler:
        out["labeler"] = {"labels": labeler.get("labels"), "features": labeler.get("n_features"),
                          "seconds": labeler.get("seconds"),
                          "final": {name: _dict(labeler.get("final")).get(name) for name in FINAL_FIELDS}}
    return out


def _cascade_part(record: dict[str, Any]) -> dict[str, Any]:
    """A cascade's threshold and top-k, and what its first stage keeps (the share of the gold arcs and of all
    arcs) of the tuning split, at that threshold, and of the training sentences (:mod:`egnlp.parser.cascade`)."""
    rows = record.get("tuning") if isinstance(record.get("tuning"), list) else []
    tuned = next((row for row in rows if isinstance(row, dict) and row.get("threshold") == record.get("threshold")),
                 {})
    return {"threshold": record.get("threshold"), "top_k": record.get("top_k"),
            "values": record.get("values", MARGINALS),  # records before max-marginals have none
            "tuning_sentences": record.get("tuning_sentences"), "tuning_recall": tuned.get("recall"),
            "tuning_kept": tuned.get("kept"), "train_recall": record.get("train_recall"),
            "train_kept": record.get("train_kept"), "seconds": record.get("seconds")}


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


# -- text ----------------------------------------------------------------------------------------------


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _names(values: list[str] | None, limit: int = 60) -> str:
    if not values:
        return "none"
    shown = " ".join(values[:limit])
    return f"{len(values)}: {shown}" + (f" ... (+{len(values) - limit})" if len(values) > limit else "")


def _final(final: dict[str, Any] | None) -> str:
    if not final:
        return "not recorded"
    parts = [f"primal {_number(final.get('primal'))}"]
    if final.get("dual") is not None:
        parts.append(f"dual {_number(final['dual'])}")
    if final.get("gap") is not None:
        rel = final.get("rel_gap")
        parts.append(f"gap {_number(final['gap'])}" + (f" (relative {rel:.2e})" if rel is not None else ""))
    elif final.get("grad_norm") is not None:
        parts.append(f"gradient norm {final['grad_norm']:.2e}")
    if final.get("dev") is not None:
        parts.append(f"dev {final['dev']:.2f}")
    if final.get("C") is not None:
        parts.append(f"at C = {_number(final['C'])}")
    return ", ".join(parts)


def _data_line(data: dict[str, Any]) -> str:
    files = ", ".join(data.get("sources") or [])
    if files and data.get("more_sources"):
        files += f" and {data['more_sources']} more files"
    where = ": ".join(filter(None, [data.get("name"), files])) or "not recorded"
    sizes = []
    if data.get("train_sentences") is not None:
        sizes.append(f"{_number(data['train_sentences'])} sentences")
    if data.get("train_tokens") is not None:
        sizes.append(f"{_number(data['train_tokens'])} tokens")
    if data.get("dev_sentences"):
        sizes.append(f"dev {_number(data['dev_sentences'])} sentences")
    return where + (f" ({', '.join(sizes)})" if sizes else "")


def format_info(info: dict[str, Any]) -> str:
    """The description of :func:`model_info` as aligned ``name  value`` lines (a pipeline's stages each
    under a heading of its own)."""
    rows = [("file", f"{info['file']} ({_number(info['bytes'])} bytes)")]
    if info["kind"] != "pipeline":
        return _aligned(rows + _rows(info))
    training = info["training"]
    cpu = training.get("train_cpu_seconds") or {}
    rows += [("kind", f"pipeline, format version {info['format_version']}"), ("language", info["language"]),
             ("stages", ", ".join(info["components"])),
             ("tokenizer", str(training.get("tokenizer", "not recorded"))),
             *([("parser input", str(training["parser_columns"]))] if "parser_columns" in training else []),
             ("training data", f"{training.get('data') or 'not recorded'}, {_number(training.get('sentences'))} "
              f"sentences; {sum(cpu.values()):.1f} CPU s")]
    return _aligned(rows) + "".join(f"\n{name}:\n" + _aligned(_rows(stage), "  ")
                                    for name, stage in info["stages"].items())


def cascade_line(record: dict[str, Any]) -> str:
    """The line ``egnlp model info`` shows for a parser's cascade, from its training record (the model's
    ``info["cascade"]``): also what ``parser train`` says once the pruner is trained."""
    return _cascade(_cascade_part(record))


def tree_choice_line(record: dict[str, Any]) -> str:
    """The line ``egnlp model info`` shows for ``--tree auto``'s measurement, from its training record (the
    model's ``info["tree_choice"]``)."""
    return _tree_choice({**record, "uas": _dict(record.get("uas"))})


def _tree_choice(choice: dict[str, Any]) -> str:
    """The line of ``--tree auto``'s measurement: the space chosen and the UAS of both on the held-out tenth."""
    uas = choice["uas"]
    scores = ", ".join(f"{name} {uas[name]:.2f}" for name in ("projective", "non-projective")
                       if isinstance(uas.get(name), (int, float)))
    return (f"{choice['chosen']} by --tree auto: UAS on the training file's last tenth "
            f"({_number(choice['tuning_sentences'])} sentences) {scores or 'not measured'}"
            + (f"; {choice['seconds']:.1f} CPU s" if isinstance(choice.get("seconds"), (int, float)) else ""))


def _cascade(cascade: dict[str, Any]) -> str:
    """The line of a cascade: its threshold and top-k, and what its first stage keeps of the tuning split."""
    text = (f"first-order pruner by {cascade['values']}, threshold {_number(cascade['threshold'])}, "
            f"at most {_number(cascade['top_k'])} heads a word")
    if isinstance(cascade.get("tuning_recall"), (int, float)) and isinstance(cascade.get("tuning_kept"), (int, float)):
        text += (f"; on the training file's last tenth ({_number(cascade['tuning_sentences'])} sentences) it keeps "
                 f"{100 * cascade['tuning_recall']:.2f}% of the gold arcs, {100 * cascade['tuning_kept']:.1f}% of "
                 "all arcs")
    return text


def _aligned(rows: list[tuple[str, str]], indent: str = "") -> str:
    width = max(len(name) for name, _ in rows)
    return "".join(f"{indent}{name:<{width}}  {value}\n" for name, value in rows)


def _rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    """The ``(name, value)`` lines of one parser, tagger or lemmatizer's description."""
    if info["kind"] == "lemmatizer":
        return _lemmatizer_rows(info)
    rows: list[tuple[str, str]] = [("kind", f"{info['kind']}, format version {info['format_version']}")]
    features = info["features"]
    if info["kind"] == "parser":
        parts = {2: "arcs and siblings (second order)", 3: "arcs, siblings and grandparents (third order)"
                 }.get(info.get("order"), "arcs (first order)")
        rows += [("tree space", f"{info['tree']}, {info['root']} root"
                  + ("; final punctuation a leaf of the root's child" if info.get("final_on_root") else "")),
                 ("parts", parts),
                 ("tag columns", f"{info['tag_columns']}: {TAG_COLUMNS.get(info['tag_columns'], '')}"),
                 ("features", f"{_number(features['count'])} ({features['mode']}"
                  + (f", 2^{features['hash_bits']} ids" if features["hash_bits"] else "")
                  + f"; lemma {_number(features['use_lemma'])}, feats {_number(features['use_feats'])}; "
                  f"templates {features['templates']}"
                  + (f"; {_number(features['sibling_count'])} of them sibling features, templates "
                     f"{features['sibling_templates']}" if features.get("sibling_count") is not None else "")
                  + (f"; {_number(features['grand_count'])} grandparent features, templates "
                     f"{features['grand_templates']}" if features.get("grand_count") is not None else "") + ")"),
                 ("labels", f"{_names(info['labels'])}; label templates version {info['labeler_templates']}"
                  if info["labels"] is not None else "none (unlabeled parser)")]
    else:
        rows += [("model", f"{info['model']}, predicts the {info['column']} column"
                  + (" from words and POS tags" if info["reads_pos"] else " from words")),
                 ("tag set", _names(info["tags"])),
                 ("features", f"{_number(features['count'])}"
                  + (f" ({_number(features['predicates'])} predicates)" if features["predicates"] else "")),
                 ("vocabulary", f"{_number(info['vocabulary'])} word forms")]
        if info["beam"] is not None:
            rows.append(("beam", str(info["beam"])))
    training = info["training"]
    rows.append(("training data", _data_line(training["data"])))
    trainer = training["trainer"] or "not recorded"
    config = training["config"]
    if config:
        trainer += ": " + ", ".join(f"{key}={_number(value)}" for key, value in config.items())
    rows.append(("trainer", trainer))
    for extra in ("sigma2", "cutoff"):
        if extra in training:
            rows.append((extra, _number(training[extra])))
    if "tree_choice" in training:
        rows.append(("tree choice", _tree_choice(training["tree_choice"])))
    if "cascade" in training:
        rows.append(("cascade", _cascade(training["cascade"])))
    if training["settings"]:
        rows.append(("settings", ", ".join(f"{key}={_number(value) if value is not None else 'from the data'}"
                                           for key, value in training["settings"].items())))
    final = training["final"]
    if final:
        state = {True: "converged", False: "stopped before converging"}.get(training["converged"], "")
        rows.append(("result", ", ".join(filter(None, [
            state, f"{_number(final.get('passes'))} passes",
            f"{final['eff_iters']:.1f} effective iterations" if final.get("eff_iters") is not None else "",
            f"{final['seconds']:.1f} s" if final.get("seconds") is not None else ""]))))
    rows.append(("final", _final(final)))
    labeler = training.get("labeler")
    if labeler:
        rows.append(("labeler", f"{_number(labeler['labels'])} labels, {_number(labeler['features'])} features; "
                     f"{_final(labeler['final'])}"))
    return rows
