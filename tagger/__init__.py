"""The taggers: chain kernels (Viterbi, forward-backward), the CRF and maxent models, raw-text
segmentation (NLTK's Punkt, or the trained character-chain :class:`Tokenizer`), and the :class:`Tagger` model.

    from egnlp.tagger import Tagger
    tagger = Tagger.load("pos.npz")
    tagger.tag("The cat sat on the mat. It purred.")
"""

from typing import TYPE_CHECKING

from egnlp.base.exports import lazy_exports
from egnlp.base.kernel_compile import install as _compile_rules

_compile_rules()  # before any of its kernels compiles: see egnlp.base.kernel_compile

_EXPORTS = {"Tagger": "tagger_model", "ModelError": "egnlp.base.errors", "tag_scores": "accuracy",
            "Tokenizer": "tokenizer_model"}

if TYPE_CHECKING:
    from egnlp.base.errors import ModelError

    from .accuracy import tag_scores
    from .tagger_model import Tagger
    from .tokenizer_model import Tokenizer

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["ModelError", "Tagger", "Tokenizer", "tag_scores"]
