"""The Parser model: features + weights + tree space; parse, save, load.

A model file is one ``.npz`` (numpy's zip of arrays, read with
``allow_pickle=False`` so loading never runs code) holding:

- ``weights`` (n_features,) float64;
- ``keys`` (uint64) and ``codes`` (int64): the feature alphabet;
- ``labeler_*``: the arc labeler's arrays, when the parser has one (its
  labels and ``label_templates``, the version of its templates, are in the
  metadata; files written before version 2 have none and are version 1);
- ``sibling_keys`` (uint64): the sibling templates' alphabet of a
  second-order parser (``order`` 2 in the metadata; the weights of those
  features follow the first-order ones);
- ``grand_keys`` (uint64): also the grandparent templates' alphabet of a
  third-order parser (``order`` 3; their weights follow the sibling ones);
- ``pruner_weights`` (float64, one per first-order feature): the first stage
  of a pruned second- or third-order parser (a cascade; its ``threshold``,
  ``top_k`` and ``values`` in the metadata's ``cascade``, :mod:`egnlp.parser.cascade`;
  files without ``values`` prune by marginals);
- ``meta``: UTF-8 JSON bytes (uint8) with the format version, the model kind,
  the feature configuration, the tree space (and ``final_on_root``: whether
  final punctuation is decoded on the root's child), the labels, the dtype and shape
  of every array, and the training settings and final objective values.

The file carries a checksum of all its bytes, and loading checks every
array against its record and the metadata before using it
(:mod:`egnlp.base.files`). It is written to a temporary file beside the
target and renamed, so a crash never leaves a half-written model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Sequence, overload

import numpy as np

from egnlp.corpora import Sentence
from egnlp.base.errors import InputError
from egnlp.base.workers import map_blocks
from egnlp.corpora.sentence import BLANK, CPOS, DEPREL, FEATS, FORM, HEAD, LEMMA, POS, probability_text
from egnlp.base.nltk_bases import NLTKBase, nltk_base
from egnlp.base.files import ModelError, check_arrays, check_labels, check_weights, read_npz, write_npz_atomic
from egnlp.features.arc_featurizer import ArcFeaturizer, ArcWeights
from egnlp.features.arc_templates import TEMPLATES_VERSION, EncodedCorpus
from egnlp.features.kept_parts import kept_parts
from egnlp.parser.labeler import ArcLabeler
from egnlp.parser.attachment import is_punct
from egnlp.parser.tree_checks import NoTreeError, check_root
from egnlp.parser.trees import (PROJECTIVE, check_final_on_root, final_on_root_argmax, final_on_root_marginals,
                                tree_space)

if TYPE_CHECKING:  # the higher-order modules load when a model uses them (a first-order parse starts 30 ms sooner)
    from nltk.parse import DependencyGraph
    from egnlp.features.grandparents import GrandFeaturizer
    from egnlp.features.siblings import SiblingFeaturizer
    from egnlp.parser.cascade import ArcPruner, KeptArcs

FORMAT_VERSION = 3  # 2: tag columns by name, the arc labeler; 3: a checksum and the arrays' records
MODEL_KIND = "egnlp-parser"
# The arrays of a parser file but the labeler's: name -> (dtype, number of dimensions).
ARRAYS = {"weights": ("<f8", 1), "keys": ("<u8", 1), "codes": ("<i8", 1)}
SIBLING_ARRAYS = {"sibling_keys": ("<u8", 1)}  # and those of a second-order parser
GRAND_ARRAYS = {"grand_keys": ("<u8", 1)}  # and those of a third-order parser
PRUNER_ARRAYS = {"pruner_weights": ("<f8", 1)}  # and those of a cascade's first stage
FEATURE_SETTINGS = {"templates": str, "mode": str, "hash_bits": int, "use_lemma": bool, "use_feats": bool,
                    "tags": str}
# The tag columns of a sentence (UPOS: CoNLL-X CPOSTAG; XPOS: POSTAG) that a model reading ``tags`` needs.
NEEDED_COLUMNS = {"both": ("upos", "xpos"), "upos": ("upos",), "xpos": ("xpos",)}
COLUMN_NAMES = {"upos": "UPOS (CPOSTAG)", "xpos": "XPOS (POSTAG)"}
# The tag column a tagger fills, by its ``column`` attribute (egnlp's Tagger: "pos" is POSTAG / XPOS).
TAGGER_COLUMNS = {"upos": "upos", "xpos": "xpos", "pos": "xpos"}
HEAD_PROB = "HeadProb"  # the MISC key of a head's probability (``parse_corpus(..., confidence=True)``)
UNLABELED_ROOT = "ROOT"  # the relation of root arcs in the graphs of an unlabeled parser (NLTK's default)


@nltk_base("nltk.parse.api", "ParserI")
class Parser(NLTKBase):
    """A first-order dependency parser, or a second-order one with ``siblings`` (a
    :class:`~egnlp.features.siblings.SiblingFeaturizer`: sibling parts, McDonald and Pereira 2006, decoded
    by :mod:`egnlp.parser.eisner_siblings`), or a third-order one with ``siblings`` and
    ``grand`` (a :class:`~egnlp.features.grandparents.GrandFeaturizer`: grandparent parts too, Koo and
    Collins 2010, decoded by :mod:`egnlp.parser.eisner_grandparents`), with a second-stage arc labeler when trained
    on labels.

    ``tree`` (projective, non-projective) and ``root`` (single, multi) are the
    tree space it predicts in (:mod:`egnlp.parser.trees`); with ``final_on_root`` (first order, single
    root) a sentence that ends in punctuation is decoded with it as a leaf of the root's one child
    (:func:`~egnlp.parser.trees.final_on_root_argmax`); ``labeler`` (an
    :class:`~egnlp.parser.labeler.ArcLabeler`, or None for an unlabeled
    parser) gives every predicted arc its DEPREL.

    It is an NLTK parser (:class:`nltk.parse.api.ParserI`, attached when NLTK is imported: see
    :mod:`egnlp.base.nltk_bases`): :meth:`parse`
    and :meth:`parse_sents` take sentences as lists of tokens and give
    :class:`nltk.parse.DependencyGraph` objects.  ``tagger`` (any NLTK
    tagger, or a mapping ``{"upos": tagger, "xpos": tagger}``) tags
    sentences given as words only; see :meth:`parse_sents`.

    ``prune`` (default on; an attribute, not saved with the model): a first-order parser with an
    alphabet decodes without the arcs whose coarse tags no gold training arc joined in their direction
    at their distance or farther (:meth:`~egnlp.features.arc_featurizer.ArcFeaturizer.arc_scores`),
    and over every arc when that leaves no tree; off, it always decodes every arc.

    ``pruner`` (second and third order; an :class:`~egnlp.parser.cascade.ArcPruner` over the same arc
    features): the first stage of a cascade, whose first-order max-marginals keep each word's likeliest heads;
    the higher-order charts decode over those arcs only (Koo and Collins 2010, Sec. 5); :meth:`kept_arcs`
    counts what it keeps of sentences with gold heads.

    A second- or third-order parser in the non-projective space decodes the projective chart's best tree
    and then rearranges it (McDonald and Pereira 2006, Sec. 3.2: :func:`~egnlp.parser.rearrange.rearrange`,
    over the cascade's kept arcs; a max-margin trainer's argmax rearranges too, EG's marginals are those of
    projective trees); its head marginals (:meth:`head_marginals`, ``confidence``) are the projective chart's.
    """

    def __init__(self, featurizer: ArcFeaturizer, weights: np.ndarray, root: str = "multi",
                 info: dict[str, Any] | None = None, labeler: ArcLabeler | None = None, tree: str = PROJECTIVE,
                 *, tagger: Any = None, siblings: SiblingFeaturizer | None = None,
                 grand: GrandFeaturizer | None = None, final_on_root: bool = False, prune: bool = True,
                 pruner: ArcPruner | None = None):
        check_root(root)
        self.space = tree_space(tree)
        if final_on_root:
            check_final_on_root(root, 1 if siblings is None else 2)
        if grand is not None and siblings is None:
            raise ValueError("a third-order parser has sibling parts too")
        if pruner is not None and (siblings is None or pruner.weights.shape != (featurizer.n_features,)):
            raise ValueError("a cascade's pruner has one weight per arc feature, before a higher-order model")
        self.pruner = pruner
        if not _sealed(weights):  # a read-only copy of the caller's array, unless it is sealed already
            weights = np.array(weights, dtype=np.float64, order="C")
        n_features = (featurizer.n_features + (siblings.n_features if siblings is not None else 0)
                      + (grand.n_features if grand is not None else 0))
        if weights.shape != (n_features,):
            raise ValueError(f"{weights.shape[0]} weights for {n_features} features")
        weights.setflags(write=False)
        self.featurizer = featurizer
        self.siblings = siblings
        self.grand = grand
        self._weights = weights
        self.root = root
        self.final_on_root = bool(final_on_root)
        self.info = dict(info or {})
        self.labeler = labeler
        self.tagger = tagger
        self.prune = bool(prune)
        self._arc_weights: ArcWeights | None = None  # the arc weights as the direct scorer reads them, made once

    @property
    def tree(self) -> str:
        return self.space.name

    @property
    def order(self) -> int:
        """1 (arc parts), 2 (sibling parts) or 3 (sibling and grandparent parts)."""
        return 1 if self.siblings is None else 2 if self.grand is None else 3

    @property
    def weights(self) -> np.ndarray:
        """The feature weights (read-only: a parser with other weights is a new ``Parser``)."""
        return self._weights

    def predict_heads(self, sentences: Sequence[Sentence]) -> list[list[int]]:
        """The best tree of each sentence as heads of words 1..n (0 = root)."""
        return self._heads(self.featurizer.encode(sentences), final_punct(sentences))

    def head_marginals(self, sentence: Sentence) -> np.ndarray:
        """The head marginals of one sentence of n words: an (n + 1, n + 1) array ``mu`` indexed ``[head,
        modifier]``, the root at 0, with ``mu[h, m]`` = p(head of m is h | sentence) under the model's
        distribution p(tree) ∝ exp(score(tree)) over the trees it decodes in.

        The tree space is the decoder's: projective trees by inside-outside (Eisner's chart,
        :func:`~egnlp.parser.eisner.inside_outside`) or any trees by the matrix-tree theorem
        (:func:`~egnlp.parser.nonprojective.mtt_marginals`), with one root child or any number
        (:attr:`root`); with :attr:`final_on_root`, a sentence ending in punctuation has it as a leaf
        child of the root's child (:func:`~egnlp.parser.trees.final_on_root_marginals`); with
        :attr:`prune`, the pruned arcs are out (probability 0), unless they leave no tree, as when
        decoding.  A second- or third-order model's marginals are those of its own parts (sibling and
        grandparent parts: :func:`~egnlp.parser.eisner_siblings.sibling_marginals`,
        :func:`~egnlp.parser.eisner_grandparents.grand_marginals`), summed over the parts of each arc.
        Every dynamic program runs in log space (no overflow on long sentences).  Column 0 and the
        diagonal are 0 and each column m >= 1 sums to 1; an empty sentence gives a (1, 1) array of 0.
        """
        if not len(sentence):
            return np.zeros((1, 1))
        return next(self._trees(self.featurizer.encode([sentence]), final_punct([sentence]), True))[1]

    def kept_arcs(self, sentences: Sequence[Sentence], *, jobs: int | None = 1) -> KeptArcs:
        """What the cascade's first stage keeps of ``sentences`` (with gold heads): its masks, the arcs the
        higher-order charts decode over when parsing them (without the gold arcs training adds), counted
        by :func:`~egnlp.parser.cascade.count_kept`: the gold arcs kept (the pruner's oracle recall) and
        the arcs kept of the n * n of each sentence (Koo and Collins 2010, Sec. 5).  ``jobs`` processes
        (None: every core) count blocks of the sentences; the result is the same for any.

        Raises:
            ValueError: the parser has no cascade, or a sentence has no heads.
        """
        from egnlp.parser.cascade import KeptArcs

        if self.pruner is None:
            raise ValueError("the parser has no cascade: no first stage keeps its arcs")
        missing = next((s for s in sentences if s.heads is None), None)
        if missing is not None:
            raise ValueError(f"{missing.source}:{missing.line}: the sentence has no heads to count")
        self.featurizer.score_lookup()  # built once, before any worker starts
        return sum(map_blocks(_kept_block, self, [s for s in sentences if len(s)], jobs), KeptArcs())

    def _masks(self, encoded: EncodedCorpus) -> Iterator[np.ndarray]:
        """The cascade's masks of the kept arcs of each encoded sentence
        (:meth:`~egnlp.parser.cascade.ArcPruner.masks`)."""
        return self.pruner.masks(self.featurizer, encoded)

    def _kept_arc_scores(self, encoded: EncodedCorpus, arc_w: ArcWeights, prune: bool
                         ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(arc scores, kept arcs) of each encoded sentence of a cascade: the arcs its masks do not keep get
        -inf.  With the tag filter (``prune``) the pruner's arc scores and these come from one walk of the
        arcs (:meth:`~egnlp.parser.cascade.ArcPruner.kept_arc_scores`); without it, the masks come first and
        the arcs they keep are scored in a walk of their own (the others' lookups skipped)."""
        if prune:
            for keep, arc in self.pruner.kept_arc_scores(self.featurizer, encoded, arc_w):
                yield arc, keep
        else:
            masks = list(self._masks(encoded))
            yield from zip(self.featurizer.block_arc_scores(encoded, arc_w, False, masks), masks)

    def _every_arc(self, encoded: EncodedCorpus, s: int, arc_w: ArcWeights, prune: bool) -> np.ndarray:
        """The arc scores of a cascade's sentence ``s`` over every arc.  With the tag filter (``prune``), by the
        kernel of :meth:`_kept_arc_scores`' one walk (the weights given twice): the parse then compiles that
        scorer alone, not the one of a weight vector as well (about 5 CPU s of compiling)."""
        if prune:
            return self.featurizer.arc_score_pair(encoded, s, arc_w, arc_w)[0]
        return self.featurizer.arc_scores(encoded, s, arc_w)

    def _heads(self, encoded: EncodedCorpus, finals: Sequence[bool]) -> list[list[int]]:
        """Heads of each encoded sentence; ``finals``: whether each ends in punctuation."""
        return [heads[1:].tolist() for heads, _ in self._trees(encoded, finals)]

    def _trees(self, encoded: EncodedCorpus, finals: Sequence[bool], marginals: bool = False
               ) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """(heads (n+1,), and with ``marginals`` the head marginals (n+1, n+1), else None) of each encoded
        sentence, both over the same scores (see :meth:`head_marginals`)."""
        n_arc = self.featurizer.n_features
        n_sib = n_arc + (self.siblings.n_features if self.siblings is not None else 0)
        sib_w, grand_w = self.weights[n_arc:n_sib], self.weights[n_sib:]
        if self._arc_weights is None:
            self._arc_weights = self.featurizer.arc_weights(self.weights[:n_arc])
        arc_w = self._arc_weights
        # a cascade's arcs are scored with the tag filter too: its pruner's masks hold none of the filtered
        # arcs unless every arc was scored (then so is this sentence's, below)
        prune = self.prune and (self.siblings is None or self.pruner is not None)
        scored = (self._kept_arc_scores(encoded, arc_w, prune) if self.pruner is not None
                  else ((arc, None) for arc in self.featurizer.block_arc_scores(encoded, arc_w, prune)))
        for s, (arc, keep) in enumerate(scored):
            mu = None
            if self.siblings is None:
                try:
                    heads = self._argmax(arc, finals[s])
                except NoTreeError:  # the pruned arcs leave no tree of the space: decode every arc
                    if not prune:
                        raise
                    arc = self.featurizer.arc_scores(encoded, s, arc_w)
                    heads = self._argmax(arc, finals[s])
                if marginals:
                    mu = self._marginals(arc, finals[s])
            else:
                if keep is not None and (arc[keep != 0] == -np.inf).any():  # the pruner decoded every arc
                    arc = self._every_arc(encoded, s, arc_w, prune)
                try:
                    heads, mu = self._higher_order(encoded, s, arc, keep, marginals, sib_w, grand_w)
                except NoTreeError:  # the kept arcs hold no tree of the space: decode every arc
                    if keep is None:
                        raise
                    heads, mu = self._higher_order(encoded, s, self._every_arc(encoded, s, arc_w, prune), None,
                                                   marginals, sib_w, grand_w)
            yield heads, mu

    def _higher_order(self, encoded: EncodedCorpus, s: int, arc: np.ndarray, keep: np.ndarray | None,
                      marginals: bool, sib_w: np.ndarray, grand_w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(heads, and with ``marginals`` the head marginals, else None) of sentence ``s`` by the second- or
        third-order chart over the arcs ``keep`` keeps (None: every arc), rearranged outside the projective
        space (McDonald and Pereira 2006, Sec. 3.2).

        Raises:
            NoTreeError: no tree of the space has only kept arcs.
        """
        from egnlp.parser.eisner_siblings import arc_marginals

        size = arc.shape[0]
        mu = None
        # a cascade's sentence: the parts of its kept arcs only (egnlp.features.kept_parts)
        parts = kept_parts(keep) if keep is not None else None
        theta = self.siblings.scores(self.siblings.compile(encoded, s, parts=parts), arc, sib_w)
        grand = None
        if self.grand is None:
            from egnlp.parser.eisner_siblings import sibling_argmax, sibling_marginals
            heads = sibling_argmax(theta, size, self.root, parts=parts)
            if marginals:
                mu = arc_marginals(sibling_marginals(theta, size, self.root, parts=parts)[1], size, parts)
        else:
            from egnlp.parser.eisner_grandparents import grand_argmax, grand_marginals
            grand = self.grand.scores(self.grand.compile(encoded, s, parts=parts), grand_w)
            heads = grand_argmax(theta, grand, size, self.root, parts=parts)
            if marginals:
                mu = arc_marginals(grand_marginals(theta, grand, size, self.root, parts=parts)[1], size, parts)
        if self.space.name != PROJECTIVE:  # McDonald and Pereira (2006, Sec. 3.2)
            from egnlp.parser.rearrange import rearrange
            heads = rearrange(heads, theta, grand, self.root, parts=parts)[0]
        return heads, mu

    def _argmax(self, arc: np.ndarray, final: bool) -> np.ndarray:
        """The best tree of first-order arc scores; ``final``: the sentence ends in punctuation."""
        return (final_on_root_argmax(self.space.argmax, arc, self.root) if self.final_on_root and final
                else self.space.argmax(arc, root=self.root))

    def _marginals(self, arc: np.ndarray, final: bool) -> np.ndarray:
        """The arc marginals of first-order arc scores over :meth:`_argmax`'s trees."""
        return (final_on_root_marginals(self.space.marginals, arc, self.root) if self.final_on_root and final
                else self.space.marginals(arc, root=self.root)[1])

    @overload
    def predict(self, sentences: Sequence[Sentence], *, jobs: int | None = 1, confidence: Literal[False] = False
                ) -> tuple[list[list[int]], list[list[str]] | None]: ...

    @overload
    def predict(self, sentences: Sequence[Sentence], *, jobs: int | None = 1, confidence: Literal[True]
                ) -> tuple[list[list[int]], list[list[str]] | None, list[list[float]]]: ...

    def predict(self, sentences: Sequence[Sentence], *, jobs: int | None = 1, confidence: bool = False) -> tuple:
        """Heads of every sentence's best tree, and the labels of its arcs (None without a labeler); with
        ``confidence``, a third list: the probability of each word's predicted head, ``mu[head, word]`` of
        :meth:`head_marginals` (computed over the scores the decoder used).

        ``jobs`` processes (None: every core) parse blocks of the sentences; the result is the same for any.
        """
        self.featurizer.score_lookup()  # built once, before any worker starts
        results = map_blocks(_confident_block if confidence else _predict_block, self, sentences, jobs)
        heads = [r[0] for r in results]
        labels = [r[1] for r in results] if self.labeler is not None else None
        return (heads, labels, [r[2] for r in results]) if confidence else (heads, labels)

    @property
    def tag_columns(self) -> tuple[str, ...]:
        """The tag columns the model reads: ``("upos", "xpos")``, ``("upos",)`` or ``("xpos",)``."""
        return NEEDED_COLUMNS[self.featurizer.tags]

    def parse_corpus(self, sentences: Sequence[Sentence], *, jobs: int | None = 1,
                     confidence: bool = False) -> list[Sentence]:
        """Copies of ``sentences`` with predicted heads and labels (DEPREL ``_`` without a labeler), parsed by
        ``jobs`` processes (None: every core; the same result for any number).

        With ``confidence``, column 10 (CoNLL-U MISC) of every word also says the probability of its head,
        ``HeadProb=0.9312`` (:meth:`predict`; other MISC entries kept, see
        :meth:`~egnlp.corpora.Sentence.with_misc`): for CoNLL-U sentences, CoNLL-X has no MISC column.
        """
        if not confidence:
            heads, labels = self.predict(sentences, jobs=jobs)
            return [s.with_heads(h, labels[k] if labels is not None else None)
                    for k, (s, h) in enumerate(zip(sentences, heads))]
        heads, labels, probs = self.predict(sentences, jobs=jobs, confidence=True)
        return [s.with_heads(h, labels[k] if labels is not None else None).with_misc(
                    HEAD_PROB, [probability_text(p) for p in probs[k]])
                for k, (s, h) in enumerate(zip(sentences, heads))]

    def parse(self, sentence: Any, *, tagger: Any = None) -> "Iterator[DependencyGraph] | list[Sentence]":
        """The best tree of one sentence, as NLTK's :meth:`nltk.parse.api.ParserI.parse`: an iterator
        over one :class:`nltk.parse.DependencyGraph`.

        ``sentence`` is a list of words, of ``(word, tag)`` pairs or of
        ``(word, UPOS, XPOS)`` triples, or a :class:`~egnlp.corpora.Sentence`
        (see :meth:`parse_sents`).  A list of Sentence objects (a corpus, as
        read from a CoNLL file) is parsed as by :meth:`parse_corpus`: a list
        of Sentence copies with the predicted heads.

        Raises:
            ValueError: input the model cannot parse, saying why (see :meth:`parse_sents`).
        """
        if _is_corpus(sentence):
            return self.parse_corpus(sentence)
        return next(self.parse_sents([sentence], tagger=tagger))

    def parse_sents(self, sentences: Iterable[Any], *, tagger: Any = None) -> Iterator[Iterator[DependencyGraph]]:
        """The best tree of every sentence, as NLTK's :meth:`nltk.parse.api.ParserI.parse_sents`: an
        iterator over one iterator per sentence, each giving one :class:`nltk.parse.DependencyGraph`.

        A sentence is a list of tokens, all of one kind:

        - words (strings): tagged first by ``tagger`` (default: :attr:`tagger`),
          any NLTK tagger (``tag_sents`` or ``tag``), or a mapping
          ``{"upos": ..., "xpos": ...}`` of taggers for a model that reads
          both tag columns.  A tagger with a ``column`` attribute (egnlp's
          Tagger: ``pos`` is XPOS) must predict a column the model reads; one
          without it is taken to fill the one column the model reads;
        - ``(word, tag)`` pairs: the tag goes to the one column the model
          reads (UPOS or XPOS, :attr:`tag_columns`);
        - ``(word, UPOS, XPOS)`` triples: both columns.

        or a :class:`~egnlp.corpora.Sentence`, parsed with its own columns.  An
        empty sentence gives a graph with no words.
        The graphs hold the words, the tags in ``ctag`` (UPOS) and ``tag``
        (XPOS; ``_`` for a column not given), the heads and the relations:
        the predicted labels, or without a labeler ``ROOT`` on root arcs and
        ``_`` on the others.

        Raises:
            ValueError: a token that is not a non-empty string without
                whitespace (or a pair or triple of them), a sentence mixing
                kinds of tokens, words without a tagger, pairs for a model that
                reads two tag columns, or a tagger for the wrong column, each
                saying which.
        """
        built = self._sentences(list(sentences), tagger if tagger is not None else self.tagger)
        words = [s for s in built if len(s)]
        parsed = iter(self.parse_corpus(words) if words else [])
        from nltk.parse.dependencygraph import DependencyGraph

        graphs = [self._graph(next(parsed)) if len(s) else DependencyGraph() for s in built]
        return iter([iter([graph]) for graph in graphs])

    def _sentences(self, inputs: list[Any], tagger: Any) -> list[Sentence]:
        """Sentences of the inputs of :meth:`parse_sents`, the untagged ones tagged by ``tagger``."""
        out: list[Sentence | None] = []
        untagged: list[tuple[int, list[str]]] = []
        for number, item in enumerate(inputs, start=1):
            where = f"sentence {number}: " if len(inputs) > 1 else ""
            if isinstance(item, Sentence):
                out.append(item)
                continue
            if isinstance(item, str) or not isinstance(item, Iterable) or isinstance(item, (bytes, Mapping)):
                raise ValueError(f"{where}{_show(item)} is not a sentence; a parser takes a list of tokens "
                                 "(split and tokenise text with Tagger.tag_sentences or egnlp.pipeline)")
            tokens = list(item)
            kind = _token_kind(tokens, where)
            if not tokens:
                out.append(Sentence(()))
            elif kind == 1:
                untagged.append((len(out), tokens))
                out.append(None)
            elif kind == 2:
                needed = self.tag_columns
                if len(needed) > 1:
                    raise ValueError(f"{where}this parser reads two tag columns, UPOS and XPOS, and (word, tag) "
                                     "pairs give one: give (word, UPOS, XPOS) triples, or words with "
                                     "tagger={'upos': ..., 'xpos': ...}")
                column = needed[0]
                out.append(_sentence([t[0] for t in tokens], {column: [t[1] for t in tokens]}, where))
            else:
                out.append(_sentence([t[0] for t in tokens], {"upos": [t[1] for t in tokens],
                                                               "xpos": [t[2] for t in tokens]}, where))
        if untagged:
            columns = self._tag(tagger, [tokens for _, tokens in untagged])
            for k, (slot, tokens) in enumerate(untagged):
                where = f"sentence {slot + 1}: " if len(inputs) > 1 else ""
                out[slot] = _sentence(tokens, {column: tags[k] for column, tags in columns.items()}, where)
        return out  # type: ignore[return-value]

    def _tag(self, tagger: Any, words: list[list[str]]) -> dict[str, list[list[str]]]:
        """The tags of the columns the model reads, for sentences of ``words``, from ``tagger``."""
        needed = self.tag_columns
        reads = " and ".join(COLUMN_NAMES[c] for c in needed)
        if tagger is None:
            give = "(word, tag) pairs" if len(needed) == 1 else "(word, UPOS, XPOS) triples"
            raise ValueError(f"untagged tokens and no tagger: this parser reads {reads} tags; give {give}, or a "
                             "tagger (Parser.load(..., tagger=...), parser.tagger = ... or parse(..., tagger=...))")
        if isinstance(tagger, Mapping):
            unknown = [key for key in tagger if key not in COLUMN_NAMES]
            if unknown:
                raise ValueError("the keys of a mapping of taggers are 'upos' and 'xpos', "
                                 f"not {str(unknown[0])[:40]!r}")
            missing = [c for c in needed if c not in tagger]
            if missing:
                raise ValueError(f"this parser reads {reads} tags; no tagger for {COLUMN_NAMES[missing[0]]} "
                                 f"was given (only {', '.join(COLUMN_NAMES[c] for c in tagger) or 'none'})")
            taggers = {c: tagger[c] for c in needed}
        else:
            declared = getattr(tagger, "column", None)
            if declared is None:
                column = needed[0] if len(needed) == 1 else None
            else:
                column = TAGGER_COLUMNS.get(declared) if isinstance(declared, str) else None
                if column is None:
                    raise ValueError(f"the tagger predicts {str(declared)[:40]!r} tags, not part-of-speech tags; "
                                     f"this parser reads {reads}")
            if len(needed) > 1:
                fills = f" ({COLUMN_NAMES[column]})" if column is not None else ""
                raise ValueError(f"this parser reads two tag columns, {reads}, and one tagger fills one{fills}: "
                                 "give tagger={'upos': ..., 'xpos': ...}, or (word, UPOS, XPOS) triples")
            if column not in needed:
                raise ValueError(f"this parser reads {reads} tags; the tagger predicts {COLUMN_NAMES[column]}")
            taggers = {column: tagger}
        return {column: _run_tagger(one, words, column) for column, one in taggers.items()}

    def _graph(self, sentence: Sentence) -> DependencyGraph:
        """The parsed ``sentence`` as an NLTK DependencyGraph (see :meth:`parse_sents`)."""
        from nltk.parse.dependencygraph import DependencyGraph

        graph = DependencyGraph()
        labeled = self.labeler is not None
        for address, row in enumerate(sentence.rows, start=1):
            head = int(row[HEAD])
            rel = row[DEPREL] if labeled else (UNLABELED_ROOT if head == 0 else BLANK)
            graph.nodes[address].update({"address": address, "word": row[FORM], "lemma": row[LEMMA],
                                         "ctag": row[CPOS], "tag": row[POS], "feats": row[FEATS],
                                         "head": head, "rel": rel})
            graph.nodes[head]["deps"][rel].append(address)
        first = min((a for a in graph.nodes if graph.nodes[a]["head"] == 0 and a != 0), default=None)
        if first is not None:
            graph.root = graph.nodes[first]
            graph.top_relation_label = graph.nodes[first]["rel"]
        return graph

    def save(self, path: str | os.PathLike[str]) -> None:
        write_npz_atomic(path, *self.file_parts())

    def file_parts(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The arrays and metadata of the model file :meth:`save` writes (:meth:`from_file_parts` reads them)."""
        meta = {
            "kind": MODEL_KIND,
            "format_version": FORMAT_VERSION,
            "features": self.featurizer.config(),
            "root": self.root,
            "tree": self.tree,
            "final_on_root": self.final_on_root,
            "labels": self.labeler.labels if self.labeler is not None else None,
            "info": self.info,
        }
        if self.labeler is not None:
            meta["label_templates"] = self.labeler.templates
        arrays = {"weights": self.weights, "keys": self.featurizer.keys, "codes": self.featurizer.codes}
        if self.siblings is not None:  # first-order files stay as they were
            from egnlp.features.siblings import SIBLING_TEMPLATES_VERSION
            meta.update(order=2, sibling_templates=SIBLING_TEMPLATES_VERSION)
            arrays["sibling_keys"] = self.siblings.keys
        if self.grand is not None:
            from egnlp.features.grandparents import GRAND_TEMPLATES_VERSION
            meta.update(order=3, grand_templates=GRAND_TEMPLATES_VERSION)
            arrays["grand_keys"] = self.grand.keys
        if self.pruner is not None:
            meta["cascade"] = {"threshold": self.pruner.threshold, "top_k": self.pruner.top_k,
                               "values": self.pruner.values}
            arrays["pruner_weights"] = self.pruner.weights
        if self.labeler is not None:
            arrays.update(self.labeler.arrays())
        return arrays, meta

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, tagger: Any = None, prune: bool = True) -> "Parser":
        """Read a parser file (see the module docstring); ``tagger`` and ``prune`` become the attributes.

        Raises:
            ModelError: any file that is not a parser model of this format, or whose contents do not agree.
        """
        arrays, meta = read_npz(path, MODEL_KIND, FORMAT_VERSION)
        return cls.from_file_parts(arrays, meta, path, tagger=tagger, prune=prune)

    @classmethod
    def from_file_parts(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any], path: str | os.PathLike[str], *,
                        tagger: Any = None, prune: bool = True) -> "Parser":
        """The parser of :meth:`file_parts`' arrays and metadata read from ``path`` (named in errors).

        Raises:
            ModelError: contents that do not agree.
        """
        features = meta.get("features")
        if not isinstance(features, dict):
            raise ModelError(f"{path}: inconsistent model file (no feature configuration)")
        if features.get("templates") != TEMPLATES_VERSION:
            raise ModelError(f"{path}: model uses feature templates {str(features.get('templates'))[:40]!r}, "
                             f"this egnlp has {TEMPLATES_VERSION!r}; retrain the model")
        try:
            if set(features) != set(FEATURE_SETTINGS) or any(
                    type(features[name]) is not kind for name, kind in FEATURE_SETTINGS.items()):
                raise ValueError("malformed feature configuration")
            for name in ("root", "tree"):
                if not isinstance(meta.get(name), str):
                    raise ValueError(f"no {name} in the metadata")
            info = meta.get("info")
            if not isinstance(info, dict):
                raise ValueError("'info' is not a JSON object")
            labels = meta.get("labels")
            if labels is not None:
                check_labels(labels, "arc labels")
            final_on_root = meta.get("final_on_root", False)  # files written before it decode without
            if type(final_on_root) is not bool:
                raise ValueError(f"final_on_root {str(final_on_root)[:20]!r}")
            order = meta.get("order", 1)
            if order not in (1, 2, 3) or type(order) is not int:
                raise ValueError(f"order {str(order)[:20]!r}")
            if order >= 2:
                from egnlp.features.grandparents import GRAND_TEMPLATES_VERSION, GrandFeaturizer
                from egnlp.features.siblings import SIBLING_TEMPLATES_VERSION, SiblingFeaturizer
            if order >= 2 and meta.get("sibling_templates") != SIBLING_TEMPLATES_VERSION:
                raise ModelError(f"{path}: model uses sibling templates {str(meta.get('sibling_templates'))[:40]!r}, "
                                 f"this egnlp has {SIBLING_TEMPLATES_VERSION!r}; retrain the model")
            if order == 3 and meta.get("grand_templates") != GRAND_TEMPLATES_VERSION:
                raise ModelError(f"{path}: model uses grandparent templates {str(meta.get('grand_templates'))[:40]!r}, "
                                 f"this egnlp has {GRAND_TEMPLATES_VERSION!r}; retrain the model")
            cascade = meta.get("cascade")
            if cascade is not None and (order == 1 or not isinstance(cascade, dict)
                                        or set(cascade) - {"values"} != {"threshold", "top_k"}):
                raise ValueError(f"cascade {str(cascade)[:40]!r}")
            check_arrays({k: v for k, v in arrays.items() if not k.startswith("labeler_")},
                         {**ARRAYS, **(SIBLING_ARRAYS if order >= 2 else {}), **(GRAND_ARRAYS if order == 3 else {}),
                          **(PRUNER_ARRAYS if cascade is not None else {})})
            check_weights(arrays["weights"])
            featurizer = ArcFeaturizer(features["mode"], features["hash_bits"] or 22,
                                       use_lemma=features["use_lemma"], use_feats=features["use_feats"],
                                       tags=features["tags"],
                                       keys=arrays["keys"], codes=arrays["codes"])
            labeler_arrays = {k: v for k, v in arrays.items() if k.startswith("labeler_")}
            if labels is None and labeler_arrays:
                raise ValueError(f"unexpected array {next(iter(labeler_arrays))!r}")
            # files written before label templates version 2 have no version: theirs is 1
            labeler = (ArcLabeler.from_arrays(labels, labeler_arrays, templates=meta.get("label_templates", 1))
                       if labels is not None else None)
            siblings = SiblingFeaturizer(arrays["sibling_keys"]) if order >= 2 else None
            grand = GrandFeaturizer(arrays["grand_keys"]) if order == 3 else None
            weights = arrays["weights"]  # read from the file for this parser alone: sealed, not copied (7.6 MB on pt)
            if weights.base is None:
                weights.flags.writeable = False
            pruner = None
            if cascade is not None:
                from egnlp.parser.cascade import MARGINALS, ArcPruner
                check_weights(arrays["pruner_weights"])
                if type(cascade["top_k"]) is not int or not isinstance(cascade["threshold"], (int, float)):
                    raise ValueError(f"cascade {str(cascade)[:40]!r}")
                # files written before max-marginals have no "values": their pruners compare marginals
                pruner = ArcPruner(arrays["pruner_weights"], meta["root"], cascade["threshold"], cascade["top_k"],
                                   cascade.get("values", MARGINALS))
            return cls(featurizer, weights, meta["root"], info, labeler, meta["tree"], tagger=tagger,
                       siblings=siblings, grand=grand, final_on_root=final_on_root, prune=prune, pruner=pruner)
        except (KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None


def _sealed(weights: Any) -> bool:
    """Whether ``weights`` is a float64 C array that no one can change: read-only, and the owner of its
    data (no writable array shares it)."""
    return (isinstance(weights, np.ndarray) and weights.dtype == np.float64 and weights.flags.c_contiguous
            and not weights.flags.writeable and weights.base is None)


def final_punct(sentences: Sequence[Sentence]) -> list[bool]:
    """Whether each sentence's last word is punctuation (:func:`~egnlp.parser.attachment.is_punct`)."""
    return [bool(s.forms) and is_punct(s.forms[-1]) for s in sentences]


def _predict_block(parser: Parser, sentences: Sequence[Sentence], confidence: bool = False) -> list[tuple]:
    """(heads, labels or None) of each of ``sentences``, and with ``confidence`` the probability of each
    head: one block of :meth:`Parser.predict`."""
    encoded = parser.featurizer.encode(sentences)
    trees = list(parser._trees(encoded, final_punct(sentences), confidence))
    heads = [tree[1:].tolist() for tree, _ in trees]
    labels = parser.labeler.label(sentences, encoded, heads) if parser.labeler is not None else None
    if not confidence:
        return [(h, labels[k] if labels is not None else None) for k, h in enumerate(heads)]
    probs = [mu[tree[1:], np.arange(1, len(tree))].tolist() for tree, mu in trees]
    return [(h, labels[k] if labels is not None else None, probs[k]) for k, h in enumerate(heads)]


def _kept_block(parser: Parser, sentences: Sequence[Sentence]) -> list[KeptArcs]:
    """What the cascade keeps of each of ``sentences``: one block of :meth:`Parser.kept_arcs`."""
    from egnlp.parser.cascade import count_kept

    masks = parser._masks(parser.featurizer.encode(sentences))
    return [count_kept([mask], [s.heads]) for mask, s in zip(masks, sentences, strict=True)]


def _confident_block(parser: Parser, sentences: Sequence[Sentence]) -> list[tuple]:
    """(heads, labels or None, head probabilities) of each of ``sentences``: :func:`_predict_block` with
    ``confidence``."""
    return _predict_block(parser, sentences, True)


def _is_corpus(value: Any) -> bool:
    """Whether ``value`` is a list of Sentence objects (empty included), as :meth:`Parser.parse_corpus` takes."""
    return (isinstance(value, Sequence) and not isinstance(value, str)
            and all(isinstance(item, Sentence) for item in value))


def _show(value: Any) -> str:
    """A short description of a value for messages: its repr (cut) and its type."""
    text = repr(value)
    return f"{text[:40] + '...' if len(text) > 40 else text} ({type(value).__name__})"


def _token_kind(tokens: list[Any], where: str) -> int:
    """1 (words), 2 ((word, tag) tuples) or 3 ((word, UPOS, XPOS) tuples): the kind of every token. A
    token with tags is a tuple, as NLTK's tagged tokens are; a list is a sentence.

    Raises:
        InputError: a token of no kind, or of another kind than the first token, naming it.
    """
    kind = None
    for i, token in enumerate(tokens, start=1):
        if isinstance(token, str):
            this = 1
        elif isinstance(token, tuple) and len(token) in (2, 3) and all(isinstance(x, str) for x in token):
            this = len(token)
        else:  # a list is a sentence, never a token: [["The", "old", "man"], ...] is not read as a triple
            hint = "; to parse several sentences use parse_sents" if isinstance(token, (list, tuple)) else ""
            raise InputError(f"{where}token {i} is {_show(token)}; a sentence is a list of words, of (word, tag) "
                             f"tuples or of (word, UPOS, XPOS) tuples{hint}")
        if kind is None:
            kind = this
        elif this != kind:
            names = {1: "words", 2: "(word, tag) pairs", 3: "(word, UPOS, XPOS) triples"}
            raise InputError(f"{where}token {i} is {_show(token)} among {names[kind]}: give every token "
                             "of a sentence in the same form")
    return kind or 1


def _sentence(words: list[str], tags: dict[str, list[str]], where: str) -> Sentence:
    """A ten-column Sentence of ``words`` with ``tags`` in UPOS (CPOSTAG) and/or XPOS (POSTAG), ``_`` elsewhere."""
    for column, values in (("word", words), *((COLUMN_NAMES[c] + " tag", v) for c, v in tags.items())):
        for i, value in enumerate(values, start=1):
            if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
                raise ValueError(f"{where}{column} {_show(value)} of token {i} is not a non-empty string "
                                 "without whitespace")
    upos, xpos = tags.get("upos"), tags.get("xpos")
    rows = tuple((str(i + 1), form, BLANK, upos[i] if upos else BLANK, xpos[i] if xpos else BLANK,
                  BLANK, BLANK, BLANK, BLANK, BLANK) for i, form in enumerate(words))
    try:
        return Sentence(rows)
    except ValueError as exc:  # too long
        raise ValueError(f"{where}{str(exc).removeprefix('<string>:1: ')}") from None


def _run_tagger(tagger: Any, words: list[list[str]], column: str) -> list[list[str]]:
    """The tags ``tagger`` (an NLTK tagger: ``tag_sents`` or ``tag``) gives sentences of ``words``, checked."""
    if callable(getattr(tagger, "tag_sents", None)):
        tagged = list(tagger.tag_sents([list(w) for w in words]))
    elif callable(getattr(tagger, "tag", None)):
        tagged = [tagger.tag(list(w)) for w in words]
    else:
        raise ValueError(f"the {COLUMN_NAMES[column]} tagger is {_show(tagger)}, not a tagger "
                         "(an NLTK TaggerI with tag_sents or tag)")
    if len(tagged) != len(words):
        raise ValueError(f"the {COLUMN_NAMES[column]} tagger gave {len(tagged)} sentences for {len(words)}")
    out = []
    for k, (pairs, tokens) in enumerate(zip(tagged, words), start=1):
        pairs = list(pairs)
        if len(pairs) != len(tokens) or not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
            raise ValueError(f"the {COLUMN_NAMES[column]} tagger gave {_show(pairs)} for sentence {k}; "
                             f"expected one (word, tag) pair per token ({len(tokens)})")
        out.append([tag for _, tag in pairs])
    return out
