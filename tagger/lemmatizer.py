"""Lemmas as edit scripts: a dictionary of seen words and a maximum-entropy guesser of unseen ones.

A lemma is written as an *edit script* of its form (Chrupała, Dinu and van
Genabith 2008, Morfette; the longest-common-substring rules of UDPipe 2,
Straka 2018): a case rule, then a prefix ``strip_prefix`` taken off and
``add_prefix`` put on, and a suffix ``strip_suffix`` taken off and
``add_suffix`` put on, the part between (the longest substring form and
lemma share) kept as it is. The case rule says what the script edits:

- ``lower``: the lower-cased form (``Casas`` -> ``casa``: strip ``s``);
- ``keep``: the form as written (``Lisboa`` -> ``Lisboa``, ``EUA`` -> ``EUA``);
- ``title``: the lower-cased form, the result given a capital (``BRASIL`` -> ``Brasil``);
- ``upper``: the lower-cased form, the result upper-cased.

A pair that shares no character (pt ``foi`` -> ``ser``, nl ``is`` ->
``zijn``) gets a *whole* script: ``the lemma is this string`` (under the same
case rules). :func:`edit_script` chooses, of the rules that give the lemma,
the one whose edit is shortest (``lower`` first on ties), so that ``casas``
and ``Casas`` share one script; every pair has a script
(:func:`apply_script` of it gives the lemma back; tests check every pair of
the pt and nl treebanks). A script stores the strings it strips, so it
applies only to forms that carry them (a script that strips ``ção`` does not
apply to ``casa``).

:class:`Lemmatizer` answers a word by, in order:

1. its dictionary: the lemma seen most often in training with the word's
   form and the tag columns the model reads (``(form, UPOS, XPOS, FEATS)``),
   then the form and UPOS, the lower-cased form and UPOS, and (with
   ``form_backoff``) the form alone and the lower-cased form alone (ties: the
   lemma first in code-point order);
2. its classifier: the best-scoring edit script *that applies to the form*,
   scored by a maximum-entropy model over the predicates of
   :mod:`egnlp.features.lemma_predicates` (trained by coordinate descent,
   Huang et al. 2010, Algorithm 3, in :mod:`egnlp.lemmatizer_training`),
   preferring a lemma seen in training to a slightly likelier unseen one
   (``known_ratio``).

UD's conventions come from the treebank: punctuation keeps its form as
lemma as the treebank writes it, a ``_`` lemma is a script like any other
(pt_bosque writes ``_`` for ``]``), numbers take what the treebank gives
them, and multiword ranges get no lemma (only word lines are filled).

Model file (:func:`egnlp.base.files.write_npz_atomic`, kind
:data:`MODEL_KIND`, version :data:`FORMAT_VERSION`): the scripts, the
dictionary keys and lemmas and the classifier's predicates as packed
strings, its features and weights as numeric arrays; the columns read,
the back-off switch and training information in the JSON metadata.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from egnlp.base.errors import InputError, ModelError
from egnlp.base.files import check_arrays, pack_strings, read_npz, unpack_strings, write_npz_atomic
from egnlp.corpora.sentence import CPOS, FEATS, FORM, LEMMA, POS, Sentence
from egnlp.features.label_pairs import label_scores
from egnlp.features.lemma_predicates import TEMPLATE_VERSION, lemma_predicates

MODEL_KIND = "egnlp-lemmatizer"
FORMAT_VERSION = 1
CASES = ("lower", "keep", "title", "upper")
COLUMNS = ("upos", "xpos", "feats")  # the tag columns a lemmatizer may read, in this order
SEPARATOR = "\t"  # between the fields of a script's or a dictionary key's string (no CoNLL-U field holds a TAB)
WHOLE = "="  # the second field of a whole script: (case, "=", lemma)

__all__ = ["CASES", "COLUMNS", "EditScript", "FORMAT_VERSION", "Lemmatizer", "MODEL_KIND", "apply_script",
           "applies", "dictionary_keys", "edit_script", "lemma_accuracy", "script_from_string", "word_columns"]


# --------------------------------------------------------------------------- edit scripts


class EditScript(NamedTuple):
    """One edit script (see the module docstring); ``whole`` is the lemma of a whole script, else None."""

    case: str
    strip_prefix: str = ""
    add_prefix: str = ""
    strip_suffix: str = ""
    add_suffix: str = ""
    whole: str | None = None

    def __str__(self) -> str:
        if self.whole is not None:
            return SEPARATOR.join((self.case, WHOLE, self.whole))
        return SEPARATOR.join((self.case, "<", self.strip_prefix, self.add_prefix, self.strip_suffix,
                               self.add_suffix))

    @property
    def cost(self) -> int:
        """How much the script edits: the characters stripped and added (a whole script: more than any
        affix script of the same pair)."""
        if self.whole is not None:
            return 1000 + len(self.whole)
        return len(self.strip_prefix) + len(self.add_prefix) + len(self.strip_suffix) + len(self.add_suffix)


def script_from_string(text: str) -> EditScript:
    """The script whose ``str`` is ``text``; ValueError for anything else."""
    fields = text.split(SEPARATOR)
    if fields[0] not in CASES:
        raise ValueError(f"script {text[:40]!r}: unknown case rule")
    if len(fields) == 3 and fields[1] == WHOLE:
        return EditScript(fields[0], whole=fields[2])
    if len(fields) == 6 and fields[1] == "<":
        return EditScript(fields[0], *fields[2:])
    raise ValueError(f"script {text[:40]!r} is not an edit script")


def _edited(case: str, form: str) -> str:
    """What a script of rule ``case`` edits: the form, lower-cased unless ``keep``."""
    return form if case == "keep" else form.lower()


def _finished(case: str, text: str) -> str:
    if case == "title":
        return text[:1].upper() + text[1:]
    if case == "upper":
        return text.upper()
    return text


def applies(script: EditScript, form: str) -> bool:
    """Whether ``script`` applies to ``form``: the edited form starts and ends with what the script strips
    and keeps a character between (a whole script applies to any form)."""
    if script.whole is not None:
        return True
    text = _edited(script.case, form)
    return len(text) > len(script.strip_prefix) + len(script.strip_suffix) \
        and text.startswith(script.strip_prefix) and text.endswith(script.strip_suffix)


def apply_script(script: EditScript, form: str) -> str:
    """The lemma ``script`` makes of ``form`` (ValueError where it does not apply)."""
    if script.whole is not None:
        return _finished(script.case, script.whole)
    if not applies(script, form):
        raise ValueError(f"script {str(script)!r} does not apply to {form!r}")
    text = _edited(script.case, form)
    middle = text[len(script.strip_prefix):len(text) - len(script.strip_suffix)]
    return _finished(script.case, script.add_prefix + middle + script.add_suffix)


def _longest_common_substring(a: str, b: str) -> tuple[int, int, int]:
    """(start in a, start in b, length) of the longest substring a and b share, the first in a (then in b)
    of equals; length 0 when none."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best[2]:
                    best = (i - current[j], j - current[j], current[j])
        previous = current
    return best


def _script_for(case: str, form: str, lemma: str) -> EditScript | None:
    """The script of rule ``case`` that makes ``lemma`` of ``form``, or None if the rule cannot."""
    if case == "title":  # the lower-cased form edited, then a capital first
        if not lemma[:1].isupper():
            return None
        target = lemma[:1].lower() + lemma[1:]
    elif case == "upper":  # the lower-cased form edited, then upper-cased
        if not lemma.isupper():
            return None
        target = lemma.lower()
    else:
        target = lemma
    text = _edited(case, form)
    if len(text) != len(form):
        return EditScript(case, whole=target)  # lower-casing changed the length: no alignment to edit
    i, j, n = _longest_common_substring(text, target)
    if n == 0:
        return EditScript(case, whole=target)
    return EditScript(case, text[:i], target[:j], text[i + n:], target[j + n:])


def edit_script(form: str, lemma: str) -> EditScript:
    """The script that makes ``lemma`` of ``form``: of the case rules that can, the one that edits least
    (:data:`CASES` order on ties)."""
    if not form:
        raise ValueError("an empty form has no edit script")
    best = None
    for case in CASES:
        script = _script_for(case, form, lemma)
        if script is not None and apply_script(script, form) == lemma and (best is None or script.cost < best.cost):
            best = script
    if best is None:  # no rule gives the lemma back (a lemma whose casing no rule makes): the exact string
        best = EditScript("keep", whole=lemma)
    return best


# --------------------------------------------------------------------------- words and dictionary keys


def word_columns(columns: Sequence[str], row: Sequence[str]) -> tuple[str | None, str | None, str | None]:
    """(UPOS, XPOS, FEATS) of a CoNLL-U row, None for a column the model does not read."""
    return (row[CPOS] if "upos" in columns else None, row[POS] if "xpos" in columns else None,
            row[FEATS] if "feats" in columns else None)


def dictionary_keys(form: str, tags: tuple[str | None, str | None, str | None], form_backoff: bool) -> list[str]:
    """The dictionary keys of a word, most specific first (see the module docstring)."""
    upos = tags[0] if tags[0] is not None else ""
    full = SEPARATOR.join(("t", form, *(t if t is not None else "" for t in tags)))
    keys = [full, SEPARATOR.join(("u", form, upos)), SEPARATOR.join(("u", form.lower(), upos))]
    if form_backoff:
        keys += [SEPARATOR.join(("f", form)), SEPARATOR.join(("f", form.lower()))]
    return keys


def lemma_accuracy(gold: Sequence[Sentence], predicted: Sequence[Sentence]) -> float:
    """The share (%) of words whose predicted LEMMA is the gold one (the same words on both sides)."""
    right = total = 0
    if len(gold) != len(predicted):
        raise InputError(f"{len(predicted)} predicted sentences for {len(gold)} gold ones")
    for g, p in zip(gold, predicted):
        if len(g) != len(p):
            raise InputError(f"{len(p)} predicted words for {len(g)} gold ones")
        right += sum(a[LEMMA] == b[LEMMA] for a, b in zip(g.rows, p.rows))
        total += len(g)
    return 100.0 * right / max(total, 1)


# --------------------------------------------------------------------------- the lemmatizer

_STRINGS = ("script", "key", "lemma", "pred")
# The arrays of a model file: name -> (dtype, number of dimensions).
ARRAYS = {**{f"{name}_bytes": ("|u1", 1) for name in _STRINGS}, **{f"{name}_offsets": ("<i8", 1) for name in _STRINGS},
          "feat_ptr": ("<i8", 1), "feat_label": ("<i8", 1), "weights": ("<f8", 1)}


class Lemmatizer:
    """Fills the LEMMA column (see the module docstring).

    ``scripts`` (L,): the edit scripts the classifier chooses from, most
    frequent in training first (ties broken by its string); ``dictionary``:
    key (:func:`dictionary_keys`) -> lemma; the classifier: ``predicates``
    (P,), and for predicate p the features ``feat_ptr[p]:feat_ptr[p+1]`` with
    their script ids ``feat_label`` and ``weights``. ``columns``: the tag
    columns read (a subset of :data:`COLUMNS`). ``known_ratio`` > 0: where the best script's lemma is
    no training lemma (lower-cased), the best script whose lemma is one wins if its probability is at
    least this share of the best's (pt ``reúne``: ``reunir``, not ``reúnir``). Train one with
    :func:`egnlp.lemmatizer_training.train_lemmatizer`.
    """

    def __init__(self, scripts: Sequence[EditScript], dictionary: Mapping[str, str], predicates: Sequence[str],
                 feat_ptr: np.ndarray, feat_label: np.ndarray, weights: np.ndarray, *,
                 columns: Sequence[str] = COLUMNS, form_backoff: bool = True, known_ratio: float = 0.0,
                 info: dict[str, Any] | None = None):
        self.scripts = list(scripts)
        self.dictionary = dict(dictionary)
        self.predicates = list(predicates)
        self.feat_ptr = np.ascontiguousarray(feat_ptr, dtype=np.int64)
        self.feat_label = np.ascontiguousarray(feat_label, dtype=np.int64)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.columns = tuple(c for c in COLUMNS if c in columns)
        if len(self.columns) != len(set(columns)) or len(set(columns)) != len(columns):
            raise ValueError(f"columns must be distinct names of {', '.join(COLUMNS)}, not {list(columns)}")
        self.form_backoff = bool(form_backoff)
        self.known_lemmas = frozenset(lemma.lower() for lemma in self.dictionary.values())
        self.known_ratio = float(known_ratio)
        if not 0 <= self.known_ratio <= 1:
            raise ValueError(f"known_ratio must lie in [0, 1], not {known_ratio}")
        self.info = dict(info or {})
        L, P, n = len(self.scripts), len(self.predicates), self.feat_label.shape[0]
        if len(set(self.scripts)) != L:
            raise ValueError("repeated edit scripts")
        if self.feat_ptr.shape != (P + 1,) or self.feat_ptr[0] != 0 or self.feat_ptr[-1] != n \
                or np.any(np.diff(self.feat_ptr) < 0):
            raise ValueError(f"feat_ptr must be a CSR pointer over {n} features for {P} predicates")
        if self.weights.shape != (n,) or not np.all(np.isfinite(self.weights)):
            raise ValueError(f"{self.weights.shape} weights for {n} features, or weights that are not finite")
        if n and (self.feat_label.min() < 0 or self.feat_label.max() >= L):
            raise ValueError(f"feature labels must lie in [0, {L})")
        if any(not isinstance(v, str) or not v for v in self.dictionary.values()):
            raise ValueError("dictionary lemmas must be non-empty strings")
        self._pred_index = {p: k for k, p in enumerate(self.predicates)}
        if len(self._pred_index) != P:
            raise ValueError("repeated predicates")
        self._whole = [k for k, s in enumerate(self.scripts) if s.whole is not None]
        # (keeps case, stripped suffix) -> (id, characters stripped, stripped prefix) of each affix script
        self._by_suffix: dict[tuple[bool, str], list[tuple[int, int, str]]] = {}
        for k, s in enumerate(self.scripts):
            if s.whole is None:
                self._by_suffix.setdefault((s.case == "keep", s.strip_suffix), []).append(
                    (k, len(s.strip_prefix) + len(s.strip_suffix), s.strip_prefix))

    # -- lemmas

    def candidates(self, form: str) -> list[int]:
        """The ids of the scripts that apply to ``form``, in id order (most frequent first)."""
        found = list(self._whole)
        for keep in (False, True):
            text = _edited("keep" if keep else "lower", form)
            n = len(text)
            for k in range(n):  # what :func:`applies` checks, the suffix found by its key
                for s, stripped, prefix in self._by_suffix.get((keep, text[n - k:]), ()):
                    if n > stripped and text.startswith(prefix):
                        found.append(s)
        return sorted(found)

    def guess(self, words: Sequence[tuple[str, tuple[str | None, str | None, str | None]]]) -> list[str]:
        """The classifier's lemma of each (form, (UPOS, XPOS, FEATS)) word: the best-scoring script among
        those that apply (ties: the most frequent); the form itself where no script applies or the
        script gives an empty lemma."""
        if not words:
            return []
        if not self.scripts:
            return [form for form, _ in words]
        ids: list[int] = []
        ptr = [0]
        for form, tags in words:
            for p in lemma_predicates(form, *tags):
                k = self._pred_index.get(p)
                if k is not None:
                    ids.append(k)
            ptr.append(len(ids))
        scores = label_scores(np.array(ptr, dtype=np.int64), np.array(ids, dtype=np.int64), self.feat_ptr,
                              self.feat_label, self.weights, len(self.scripts))
        out = []
        known: dict[str, list[int]] = {}
        for i, (form, _) in enumerate(words):
            cand = known.get(form)
            if cand is None:
                cand = known[form] = self.candidates(form)
            if not cand:
                out.append(form)
                continue
            row = scores[i, cand]
            best = cand[int(np.argmax(row))]
            lemma = apply_script(self.scripts[best], form)
            if self.known_ratio > 0 and lemma.lower() not in self.known_lemmas:
                lemma = self._known_instead(form, cand, row, lemma)
            out.append(lemma if lemma else form)
        return out

    def _known_instead(self, form: str, cand: list[int], row: np.ndarray, lemma: str) -> str:
        """The lemma of the best-scoring script whose lemma is a training lemma, if its probability is at
        least ``known_ratio`` times the best script's; else ``lemma`` (the best script's)."""
        top = float(row.max())
        floor = top + np.log(self.known_ratio)
        for k in sorted(range(len(cand)), key=lambda k: (-row[k], cand[k])):
            if row[k] < floor:
                break
            other = apply_script(self.scripts[cand[k]], form)
            if other.lower() in self.known_lemmas:
                return other
        return lemma

    def lemmas(self, words: Sequence[tuple[str, tuple[str | None, str | None, str | None]]],
               known: list[bool] | None = None) -> list[str]:
        """The lemma of each (form, (UPOS, XPOS, FEATS)) word (:func:`word_columns` gives the tags):
        the dictionary's, else the classifier's. ``known``, if given, receives whether each word was in
        the dictionary."""
        distinct = list(dict.fromkeys(words))  # each distinct word once: a text repeats most of its words
        found: dict[Any, str | None] = {}
        for word in distinct:
            lemma = None
            for key in dictionary_keys(word[0], word[1], self.form_backoff):
                lemma = self.dictionary.get(key)
                if lemma is not None:
                    break
            found[word] = lemma
        if known is not None:
            known[:] = [found[word] is not None for word in words]
        unseen = [word for word in distinct if found[word] is None]
        found.update(zip(unseen, self.guess(unseen)))
        return [found[word] for word in words]  # type: ignore[misc]

    def lemmatize(self, sentences: Sequence[Sentence]) -> list[Sentence]:
        """Copies of ``sentences`` with the LEMMA column of every word filled from its FORM and the tag
        columns the model reads (multiword ranges and empty nodes are left as they are)."""
        words = [(row[FORM], word_columns(self.columns, row)) for s in sentences for row in s.rows]
        lemmas = iter(self.lemmas(words))
        out = []
        for s in sentences:
            rows = tuple((*row[:LEMMA], next(lemmas), *row[LEMMA + 1:]) for row in s.rows)
            out.append(dataclasses.replace(s, rows=rows))
        return out

    # -- files

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model file (see the module docstring), atomically."""
        write_npz_atomic(path, *self.file_parts())

    def file_parts(self) -> tuple[dict[str, np.ndarray], dict]:
        """The arrays and metadata of the model file :meth:`save` writes (:meth:`from_file_parts` reads them)."""
        keys = list(self.dictionary)
        arrays: dict[str, np.ndarray] = {}
        for name, strings in (("script", [str(s) for s in self.scripts]), ("key", keys),
                              ("lemma", [self.dictionary[k] for k in keys]), ("pred", self.predicates)):
            arrays[f"{name}_bytes"], arrays[f"{name}_offsets"] = pack_strings(strings)
        arrays.update(feat_ptr=self.feat_ptr, feat_label=self.feat_label, weights=self.weights)
        meta = {"kind": MODEL_KIND, "format_version": FORMAT_VERSION, "templates": TEMPLATE_VERSION,
                "columns": list(self.columns), "form_backoff": self.form_backoff, "known_ratio": self.known_ratio,
                "info": self.info}
        return arrays, meta

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Lemmatizer":
        """Read a model file.

        Raises:
            ModelError: a file that is not a lemmatizer of this format, or whose contents do not agree.
        """
        return cls.from_file_parts(*read_npz(path, MODEL_KIND, FORMAT_VERSION), path)

    @classmethod
    def from_file_parts(cls, arrays: dict[str, np.ndarray], meta: dict, path: str | os.PathLike[str]
                        ) -> "Lemmatizer":
        """The lemmatizer of :meth:`file_parts`' arrays and metadata read from ``path`` (named in errors).

        Raises:
            ModelError: contents that do not agree.
        """
        if meta.get("templates") != TEMPLATE_VERSION:
            raise ModelError(f"{path}: lemma predicates of version {repr(meta.get('templates'))[:40]}, this "
                             f"egnlp has version {TEMPLATE_VERSION}; retrain the model")
        try:
            check_arrays(arrays, ARRAYS)
            columns, form_backoff, info = meta["columns"], meta["form_backoff"], meta["info"]
            known_ratio = meta["known_ratio"]
            if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns) \
                    or not isinstance(form_backoff, bool) or not isinstance(info, dict) \
                    or not isinstance(known_ratio, (int, float)) or isinstance(known_ratio, bool):
                raise ValueError("columns must be a list of names, form_backoff true or false, known_ratio a "
                                 "number and info an object")
            strings = {name: unpack_strings(arrays[f"{name}_bytes"], arrays[f"{name}_offsets"]) for name in _STRINGS}
            if len(strings["key"]) != len(strings["lemma"]) or len(set(strings["key"])) != len(strings["key"]):
                raise ValueError(f"{len(strings['key'])} dictionary keys (distinct: {len(set(strings['key']))}) "
                                 f"for {len(strings['lemma'])} lemmas")
            return cls([script_from_string(s) for s in strings["script"]],
                       dict(zip(strings["key"], strings["lemma"])), strings["pred"], arrays["feat_ptr"],
                       arrays["feat_label"], arrays["weights"], columns=columns, form_backoff=form_backoff,
                       known_ratio=known_ratio, info=info)
        except KeyError as exc:
            raise ModelError(f"{path}: inconsistent model file (no {exc.args[0]!r} in its metadata)") from None
        except (ValueError, TypeError, IndexError, OverflowError) as exc:
            raise ModelError(f"{path}: inconsistent model file ({exc})") from None
