"""One settings object per job: the command line, the Python API and the Dask driver build the same
:class:`~egnlp.settings.ParserSettings` (and the tagger's commands and API the same
:class:`~egnlp.settings.TaggerSettings`) from the same choices, and a rule is checked in one place.

Each entry point is run up to the first function that receives the settings, which records them and
stops the run: nothing is trained.
"""

from __future__ import annotations

import dataclasses

import pytest

from cli_helpers import run, usage_line
from egnlp import parser_training, tagger_training
from egnlp.base.errors import SettingsError
from egnlp.corpora import load_dataset, write_conll
from egnlp.distributed import train_parser_dask
from egnlp.settings import ParserSettings, TaggerSettings


class Seen(Exception):
    """Raised by the spy with the settings it was given."""

    def __init__(self, settings) -> None:
        super().__init__("seen")
        self.settings = settings


def _spy(*args, **kwargs):
    settings = next(a for a in (*args, *kwargs.values()) if isinstance(a, (ParserSettings, TaggerSettings)))
    raise Seen(settings)


def seen(call) -> object:
    with pytest.raises(Seen) as caught:
        call()
    return caught.value.settings


# the same choices, as options of the command line and as keyword arguments of the API
PARSER_CHOICES = [
    ({}, []),
    ({"trainer": "eg-mm", "C": 12.5, "max_passes": 3, "tol": 0.01, "anneal": False, "order": "cyclic", "seed": 7,
      "max_seconds": 100.0, "tree": "auto", "tags": "upos", "labels": False, "feature_mode": "hash",
      "hash_bits": 20, "final_on_root": False, "jobs": 2},
     ["--trainer", "eg-mm", "--C", "12.5", "--passes", "3", "--tol", "0.01", "--no-anneal", "--order", "cyclic",
      "--seed", "7", "--max-seconds", "100", "--tree", "auto", "--pos", "upos", "--no-labels", "--features", "hash",
      "--hash-bits", "20", "--no-final-punct", "--jobs", "2"]),
    ({"parts": "siblings", "cascade": False, "cache_mb": 10.0, "root": "multi", "average": False, "patience": 0},
     ["--parts", "siblings", "--no-cascade", "--cache-mb", "10", "--root", "multi", "--no-average", "--patience", "0"]),
]


@pytest.mark.parametrize("options, flags", PARSER_CHOICES, ids=["defaults", "eg-mm", "siblings"])
def test_cli_api_and_dask_build_the_same_parser_settings(tmp_path, monkeypatch, options, flags) -> None:
    train = tmp_path / "train.conll"
    sentences = load_dataset("es", "train")[:12]
    write_conll(train, sentences)
    monkeypatch.setattr(parser_training.TreeChoice, "of", _spy)
    from_cli = seen(lambda: _raise_from(run("parser", "train", "--train", train, "-o", tmp_path / "m.npz", *flags)))
    from_api = seen(lambda: parser_training.train_parser(sentences, **options))
    assert from_cli == from_api == ParserSettings(**options)
    dask_options = {k: v for k, v in options.items() if k not in ("jobs", "cache_mb", "parts", "cascade", "average")}
    dask_options.setdefault("trainer", "eg-mm")
    from_dask = seen(lambda: train_parser_dask(object(), sentences, **dask_options))
    assert from_dask == dataclasses.replace(ParserSettings(**dask_options), dask=True)


def test_the_cli_and_api_build_the_same_tagger_settings(tmp_path, monkeypatch) -> None:
    train = tmp_path / "train.conll"
    sentences = load_dataset("conll2000-pos", "train")[:12]
    write_conll(train, sentences)
    monkeypatch.setattr(tagger_training, "_train_maxent", _spy)
    options = {"model": "maxent", "sigma2": 4.0, "max_passes": 3, "beam": 2, "cutoff": 2, "column": "pos"}
    from_cli = seen(lambda: _raise_from(run("tagger", "train", "--train", train, "-o", tmp_path / "m.npz",
                                            "--model", "maxent", "--sigma2", "4", "--passes", "3", "--beam", "2",
                                            "--cutoff", "2", "--column", "pos")))
    tokens, labels = [s.forms for s in sentences], [s.pos for s in sentences]
    from_api = seen(lambda: tagger_training.train_tagger(tokens, labels, **options))
    assert from_cli == from_api == TaggerSettings(**options)


@pytest.mark.parametrize("options, flags, message", [
    ({"C_path": "100:0.5:3", "patience": 2}, ["--C-path", "100:0.5:3", "--patience", "2"], "does not go with --C-path"),
    ({"max_passes": -3}, ["--passes", "-3"], "--passes must be at least 0, not -3"),
    ({"C": -1.0}, ["--C", "-1"], "C must be positive, not -1"),
    ({"trainer": "bcfw", "anneal": True}, ["--trainer", "bcfw", "--anneal"], "trainer 'bcfw' has no setting --anneal"),
    ({"cascade": True, "parts": "arcs"}, ["--cascade", "--parts", "arcs"],
     "--cascade prunes a second- or third-order model trained on one machine"),
])
def test_a_rule_is_one_check_for_the_cli_and_the_api(tmp_path, options, flags, message) -> None:
    train = tmp_path / "train.conll"
    write_conll(train, load_dataset("es", "train")[:5])
    assert message in usage_line(run("parser", "train", "--train", train, "-o", tmp_path / "m.npz", *flags))
    with pytest.raises(SettingsError, match=message.replace("(", "\\(")):
        ParserSettings(**options)
    assert not (tmp_path / "m.npz").exists()


def test_the_help_shows_the_settings_fields() -> None:
    """Every option of a settings field is on its command, with the field's help, whatever the command."""
    shown = "".join(run("parser", "train", "--help").stdout.split())
    for f in dataclasses.fields(ParserSettings):
        if "flags" in f.metadata:
            assert "".join(f.metadata["help"].split()) in shown, f.name
            assert f.metadata["flags"].split("/")[0].split(",")[0] in shown, f.name


def _raise_from(result) -> None:
    """Re-raise the exception a CLI run ended with (the spy's), else fail showing the run."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    raise AssertionError(f"the command ended with {result.exit_code}: {result.stderr}")


def test_the_compact_dual_is_an_eg_setting_of_the_crf() -> None:
    assert TaggerSettings().trainer_config().compact is False
    assert TaggerSettings(compact=True).trainer_config().compact is True
    with pytest.raises(SettingsError, match="trainer 'lbfgs' has no setting --compact-dual"):
        TaggerSettings(trainer="lbfgs", compact=True)
    with pytest.raises(SettingsError, match="--compact-dual applies to --model crf"):
        TaggerSettings(model="maxent", compact=True)


def test_the_crf_takes_a_tag_dictionary_when_its_parts_would_not_fit() -> None:
    from egnlp.settings import CRF_DICTIONARY, CRF_DICTIONARY_PARTS

    assert TaggerSettings().crf_dictionary(CRF_DICTIONARY_PARTS) == 0
    assert TaggerSettings().crf_dictionary(CRF_DICTIONARY_PARTS + 1) == CRF_DICTIONARY > 0
    assert TaggerSettings(dictionary=0).crf_dictionary(10 * CRF_DICTIONARY_PARTS) == 0
    assert TaggerSettings(dictionary=5).crf_dictionary(1) == 5
    assert TaggerSettings(model="maxent", dictionary=2).maxent_dictionary == 2
    with pytest.raises(SettingsError, match="--dictionary"):
        TaggerSettings(dictionary=-1)


def test_the_parser_computes_the_gap_of_every_pass_when_it_is_read() -> None:
    """BCFW's primal and gap of the last pass only, unless --tol (a gap to stop at) or --order gap (drawn by
    the gaps) reads them after every pass, or --gap-every says otherwise."""
    from egnlp.settings import ParserSettings

    def gap_every(**options):
        return ParserSettings(**options).trainer_configs()[0].gap_every

    assert gap_every() == 0 and gap_every(parts="grandparents") == 0
    assert gap_every(tol=1e-4) == 1 and gap_every(order="gap") == 1
    assert gap_every(gap_every=3) == 3 and gap_every(tol=1e-4, gap_every=2) == 2
