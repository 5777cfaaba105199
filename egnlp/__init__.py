"""egnlp: dependency parsers, taggers and UD pipelines trained with exponentiated-gradient methods.

    from egnlp import Parser, Pipeline, Tagger, train_parser, train_tagger

The subpackages, from the bottom layer up: :mod:`egnlp.base` (errors, model
files, worker processes), :mod:`egnlp.corpora`, :mod:`egnlp.features`, the
siblings :mod:`egnlp.parser`, :mod:`egnlp.tagger` and :mod:`egnlp.training`,
and the application layer: :mod:`egnlp.settings`,
:mod:`egnlp.parser_training`, :mod:`egnlp.tagger_training`,
:mod:`egnlp.pipeline`, :mod:`egnlp.distributed` and the command line
(:mod:`egnlp.cli`). The names below load their modules on first use.
"""

from typing import TYPE_CHECKING

__version__ = "0.3.0"

# Before any kernel loads: Numba's cached kernels of an older source of the package are dropped.
from egnlp.kernel_cache import refresh as _refresh_kernel_cache  # noqa: E402

_refresh_kernel_cache()

from egnlp.base.exports import lazy_exports  # noqa: E402

_EXPORTS = {
    "Parser": "egnlp.parser.parser_model", "Tagger": "egnlp.tagger.tagger_model", "Pipeline": "egnlp.pipeline",
    "ParserSettings": "egnlp.settings", "TaggerSettings": "egnlp.settings",
    "train_parser": "egnlp.parser_training", "train_tagger": "egnlp.tagger_training",
    "load_dataset": "egnlp.corpora.datasets", "read_conll": "egnlp.corpora.conll", "write_conll": "egnlp.corpora.conll",
    "EgnlpError": "egnlp.base.errors",
}

if TYPE_CHECKING:
    from egnlp.base.errors import EgnlpError
    from egnlp.corpora.conll import read_conll, write_conll
    from egnlp.corpora.datasets import load_dataset
    from egnlp.parser.parser_model import Parser
    from egnlp.parser_training import train_parser
    from egnlp.pipeline import Pipeline
    from egnlp.settings import ParserSettings, TaggerSettings
    from egnlp.tagger.tagger_model import Tagger
    from egnlp.tagger_training import train_tagger

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["EgnlpError", "Parser", "ParserSettings", "Pipeline", "Tagger", "TaggerSettings", "load_dataset",
           "read_conll", "train_parser", "train_tagger", "write_conll"]
