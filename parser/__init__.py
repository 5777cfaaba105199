"""The dependency parser: tree decoders (Eisner, Chu-Liu-Edmonds, the matrix-tree theorem, the second-
and third-order charts), the parsing problem trainers see, the arc labeler, and the :class:`Parser` model.

    from egnlp.parser import Parser
    parser = Parser.load("es.npz")
    trees = parser.parse_corpus(sentences)
"""

from typing import TYPE_CHECKING

from egnlp.base.exports import lazy_exports
from egnlp.base.kernel_compile import install as _compile_rules

_compile_rules()  # before any of its kernels compiles: see egnlp.base.kernel_compile

_EXPORTS = {"Parser": "parser_model", "attachment_scores": "attachment"}

if TYPE_CHECKING:
    from .attachment import attachment_scores
    from .parser_model import Parser

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["Parser", "attachment_scores"]
