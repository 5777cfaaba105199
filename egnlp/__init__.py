"""egnlp: dependency parsers and POS taggers trained with exponentiated-gradient algorithms.

The subpackages, from the bottom layer up: :mod:`egnlp.corpora` (corpus and
model files), :mod:`egnlp.features`, then the siblings :mod:`egnlp.parser`,
:mod:`egnlp.tagger` and :mod:`egnlp.training`, and the application layer
(:mod:`egnlp.parser_training`, :mod:`egnlp.tagger_training`, :mod:`egnlp.pipeline`, the CLI).
"""

__version__ = "0.2.0"

# Before any kernel loads: Numba's cached kernels of an older source of the package are dropped.
from egnlp.kernel_cache import refresh as _refresh_kernel_cache  # noqa: E402

_refresh_kernel_cache()
