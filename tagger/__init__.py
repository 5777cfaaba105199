"""tagger package: chain kernels, the CRF tagger, the Tagger model and raw-text tokenisation.

    from egnlp.tagger import Tagger
    tagger = Tagger.load("pos.npz")
    tagger.tag("The cat sat on the mat. It purred.")
"""

from egnlp.tagger.model import ModelError, Tagger

__all__ = ["ModelError", "Tagger"]
