"""UDPipe 1 beside egnlp: models trained in a child process and kept, files run through them in another.

UDPipe 1 is the Python package ``ufal.udpipe`` (not a dependency of egnlp:
``.venv/bin/pip install ufal.udpipe`` for the benchmarks that measure it).
A model is trained by ``Trainer.train("morphodita_parsito", ...)`` on one
CoNLL-U file with no held-out data and the given tokenizer, tagger and parser
options (``"default"``, ``"none"`` or UDPipe's ``key=value;...``); UDPipe's
training has no seed of its own to set (no random hyperparameter search:
``run`` is not given). Training takes minutes to half an hour, so a model is
kept in ``KEEP/udpipe1/NAME.model`` beside ``NAME.json`` (the training file's
SHA-256, the options, the UDPipe version and the training's CPU seconds),
and used again while those match.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from procs import log, run

TRAIN = """
import sys
from ufal.udpipe import InputFormat, ProcessingError, Sentence, Sentences, Trainer
train_file, model_path, tokenizer, tagger, parser = sys.argv[1:6]
reader = InputFormat.newConlluInputFormat()
with open(train_file, encoding="utf-8") as handle:
    reader.setText(handle.read())
sentences, error = Sentences(), ProcessingError()
sentence = Sentence()
while reader.nextSentence(sentence, error):
    sentences.push_back(sentence)
    sentence = Sentence()
if error.occurred():
    sys.exit(train_file + ": " + error.message)
model = Trainer.train("morphodita_parsito", sentences, Sentences(), tokenizer, tagger, parser, error)
if error.occurred():
    sys.exit("UDPipe training failed: " + error.message)
with open(model_path, "wb") as handle:
    handle.write(model if isinstance(model, bytes) else model.encode("latin-1"))
"""

# INPUT is "conllu" (tokens given) or "tokenize" (raw text); TAGGER "none" keeps the input's tags.
PROCESS = """
import sys
from ufal.udpipe import Model, Pipeline, ProcessingError
model_path, source, tagger, out_path, input_format = sys.argv[1:6]
model = Model.load(model_path)
if model is None:
    sys.exit("cannot load " + model_path)
pipeline = Pipeline(model, input_format, tagger, Pipeline.DEFAULT, "conllu")
error = ProcessingError()
with open(source, encoding="utf-8") as handle:
    out = pipeline.process(handle.read(), error)
if error.occurred():
    sys.exit(error.message)
with open(out_path, "w", encoding="utf-8") as handle:
    handle.write(out)
"""

# The parser alone, trained on gold tags: the options of the parsing and speed sections.
PARSER_ONLY = ("none", "none", "default")
# Tokenizer, tagger (with lemmas and features) and parser, all UDPipe's defaults: the raw-text section's.
FULL = ("default", "default", "default")


def version() -> str | None:
    """UDPipe 1's version (``1.4.0``), or None when ``ufal.udpipe`` is not installed in this interpreter."""
    try:
        from ufal.udpipe import Version
    except ImportError:
        return None
    current = Version.current()
    return f"{current.major}.{current.minor}.{current.patch}"


@dataclass(frozen=True)
class Trained:
    """A UDPipe model file and what its training took."""

    path: Path
    cpu: float
    wall: float
    reused: bool


def describe(options: tuple[str, str, str]) -> str:
    """Tokenizer, tagger and parser options in words, for the tables."""
    parts = [f"{what} {'none' if value == 'none' else 'defaults' if value == 'default' else value}"
             for what, value in zip(("tokenizer", "tagger", "parser"), options)]
    return ", ".join(parts)


def train(name: str, train_file: Path, options: tuple[str, str, str], folder: Path) -> Trained:
    """The model ``folder/udpipe1/NAME.model`` trained on ``train_file``; kept ones are used again."""
    where = folder / "udpipe1"
    where.mkdir(parents=True, exist_ok=True)
    model, meta = where / f"{name}.model", where / f"{name}.json"
    want = {"train_sha256": hashlib.sha256(Path(train_file).read_bytes()).hexdigest(),
            "options": list(options), "udpipe": version()}
    if model.exists() and meta.exists():
        kept = json.loads(meta.read_text(encoding="utf-8"))
        if all(kept.get(key) == value for key, value in want.items()):
            log(f"UDPipe 1 model {name}: kept ({kept['cpu']:.0f} CPU s to train)")
            return Trained(model, kept["cpu"], kept["wall"], True)
    log(f"UDPipe 1 model {name}: training on {Path(train_file).name} ({describe(options)})")
    partial = model.with_suffix(".partial")
    done = run([sys.executable, "-c", TRAIN, train_file, partial, *options])
    partial.replace(model)
    meta.write_text(json.dumps({**want, "train_file": Path(train_file).name, "cpu": done.cpu, "wall": done.wall},
                               indent=2) + "\n", encoding="utf-8")
    log(f"UDPipe 1 model {name}: {done.cpu:.0f} CPU s")
    return Trained(model, done.cpu, done.wall, False)


def process(model: Path, source: Path, out: Path, *, raw_text: bool = False, tag: bool = False):
    """Run ``source`` through the model in a new process (:class:`procs.Finished`): CoNLL-U (its tags kept unless
    ``tag``) or, with ``raw_text``, plain text (tokenized, tagged and parsed); CoNLL-U goes to ``out``."""
    tagger = "default" if tag or raw_text else "none"
    return run([sys.executable, "-c", PROCESS, model, source, tagger, out, "tokenize" if raw_text else "conllu"])
