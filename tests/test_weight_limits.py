"""Model files whose weights would overflow a score are refused when they load.

Every model kind (CRF tagger, maxent tagger, first-, second- and third-order parser, the parser's arc
labeler) is trained small, saved, and its weights rewritten through egnlp's own writer (a valid
checksum): weights that are not finite, or larger in magnitude than :data:`~egnlp.base.files.MAX_WEIGHT`,
give a one-line ModelError naming the file; weights up to that bound load and decode to finite scores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_helpers import error_line, run
from egnlp.base.errors import ModelError
from egnlp.base.files import MAX_WEIGHT, read_npz, write_npz_atomic
from egnlp.corpora import load_dataset, write_conll
from egnlp.parser.parser_model import FORMAT_VERSION as PARSER_VERSION, MODEL_KIND as PARSER_KIND, Parser
from egnlp.parser_training import train_parser
from egnlp.tagger.chain_inference import viterbi
from egnlp.tagger.tagger_model import FORMAT_VERSION as TAGGER_VERSION, MODEL_KIND as TAGGER_KIND, Tagger
from egnlp.tagger_training import label_columns, train_tagger

TAGGERS = ("crf", "maxent")
PARSERS = {"first": {"parts": "arcs"}, "second": {"parts": "siblings", "cascade": False},
           "third": {"parts": "grandparents", "cascade": False}}
# (model, array): every weight array of every model kind
WEIGHTS = [*((kind, "weights") for kind in TAGGERS),
           *((order, array) for order in PARSERS for array in ("weights", "labeler_weights"))]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tagger of each kind and a labeled parser of each order, trained on 20 es sentences; a test file."""
    folder = tmp_path_factory.mktemp("weights")
    train = load_dataset("es", "train")[:20]
    paths = {"folder": folder, "text": folder / "test.conll"}
    write_conll(paths["text"], load_dataset("es", "dev")[:4])
    tokens, labels = label_columns(train, "pos")[:2]
    for kind in TAGGERS:
        tagger, _ = train_tagger(tokens, labels, model=kind, max_passes=2)
        paths[kind] = folder / f"{kind}.npz"
        tagger.save(paths[kind])
    for order, options in PARSERS.items():
        parser, _ = train_parser(train, max_passes=1, jobs=1, **options)
        assert parser.labeler is not None
        paths[order] = folder / f"{order}.npz"
        parser.save(paths[order])
    return paths


def _rewritten(models: dict[str, Path], model: str, array: str, weights, name: str) -> Path:
    """A copy of the model file whose array ``array`` is ``weights(old array)``, written by egnlp's writer."""
    kind, version = (TAGGER_KIND, TAGGER_VERSION) if model in TAGGERS else (PARSER_KIND, PARSER_VERSION)
    arrays, meta = read_npz(models[model], kind, version)
    arrays[array] = np.ascontiguousarray(weights(arrays[array]), dtype=np.float64)
    path = models["folder"] / f"{model}-{array}-{name}.npz"
    write_npz_atomic(path, arrays, meta)
    return path


def _load(model: str, path: Path):
    return Tagger.load(path) if model in TAGGERS else Parser.load(path)


@pytest.mark.parametrize("model,array", WEIGHTS)
@pytest.mark.parametrize("value", [1e308, np.nextafter(MAX_WEIGHT, np.inf), -1e300, np.inf, np.nan])
def test_weights_that_could_overflow_a_score_are_refused_at_load(models, model, array, value) -> None:
    path = _rewritten(models, model, array, lambda w: np.full_like(w, value), f"{value:g}")
    with pytest.raises(ModelError) as refused:
        _load(model, path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert ("not finite" if not np.isfinite(value) else "could overflow") in message
    command = ("tagger", "tag") if model in TAGGERS else ("parser", "parse")
    line = error_line(run(*command, path, models["text"], "-q"))
    assert line.startswith(f"error: {path}: ")


@st.composite
def scaled_weights(draw: st.DrawFn) -> tuple[str, str, float, int]:
    """(model, array, largest magnitude up to MAX_WEIGHT, seed of the signs and sizes)."""
    model, array = draw(st.sampled_from(WEIGHTS))
    top = draw(st.one_of(st.just(MAX_WEIGHT), st.floats(1.0, MAX_WEIGHT)))
    return model, array, top, draw(st.integers(0, 2 ** 31 - 1))


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=scaled_weights())
def test_weights_up_to_the_bound_load_and_decode_to_finite_scores(models, case) -> None:
    """Weights of random signs and sizes whose largest magnitude is at most MAX_WEIGHT: the model loads
    and every score its decoders compute is finite (the CRF's best paths, the maxent tagger's
    log-probabilities, the parser's trees and its labeler's scores)."""
    model, array, top, seed = case
    rng = np.random.default_rng(seed)

    def weights(w: np.ndarray) -> np.ndarray:
        out = rng.choice([-1.0, 1.0], w.size) * rng.uniform(0.0, 1.0, w.size) * top
        out[rng.integers(w.size)] = top
        return out

    path = _rewritten(models, model, array, weights, "scaled")
    loaded = _load(model, path)
    sentences = load_dataset("es", "dev")[:4]
    forms = [s.forms for s in sentences]
    if model == "crf":
        crf = loaded.model
        features = crf.featurizer.features(crf.featurizer.encode(forms))
        for i in range(features.n_examples):  # every chain score finite: the Viterbi wrapper checks them
            assert np.isfinite(viterbi(*features.chain_scores(i, crf.weights))[1])
    elif model == "maxent":
        tags, logp = loaded.model.decode(forms)
        assert np.all(np.isfinite(logp)) and all(set(t) <= set(loaded.labels) for t in tags)
    else:
        parsed = loaded.parse_corpus(sentences)
        assert all(len(s.heads) == len(s) and set(s.deprels) <= set(loaded.labeler.labels) for s in parsed)
        encoded = loaded.featurizer.encode(sentences)
        scores = loaded.labeler.scores(loaded.labeler.events(sentences, encoded, [s.heads for s in parsed]))
        assert np.all(np.isfinite(scores))
