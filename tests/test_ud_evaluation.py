"""The CoNLL 2018 metrics of egnlp.corpora.ud_evaluation against the official scorer, udeval (udtools).

System files are made from the real UD dev files by perturbations that keep the text: tags, features,
lemmas, heads and labels changed; sentences merged and split; tokens merged and split; multiword tokens
removed, made, split or given other words; words inside multiword tokens with other forms. Every metric's
precision, recall, F1 and aligned accuracy must equal what ``udeval -v`` prints, and in the randomised
test its counts what ``udeval -c`` prints. The tests that run udeval are skipped when it is not installed.
"""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egnlp.base.errors import InputError
from egnlp.corpora import Sentence, format_conll, parse_conll, read_conll
from egnlp.corpora.sentence import find_cycle
from egnlp.corpora.ud_evaluation import METRICS, conll18_scores, format_conll18_table

UD = Path(os.environ["EGNLP_UD_DIR"])
PT, NL = UD / "pt_bosque-ud-dev.conllu", UD / "nl_alpino-ud-dev.conllu"
UDEVAL = Path(sys.executable).parent / "udeval"
needs_udeval = pytest.mark.skipif(not UDEVAL.exists(), reason="udeval not installed (the test extra: udtools)")


# A document as a list of sentences of tokens, whose words point at their head words (None: the root), so that
# sentences and tokens can be cut and joined; written back, the heads are renumbered and made a tree again.

@dataclass(eq=False)
class Word:
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str
    head: Word | None
    deprel: str
    misc: str


@dataclass(eq=False)
class Token:
    form: str
    words: list[Word]
    multiword: bool


Document = list[list[Token]]


def document(sentences: list[Sentence]) -> Document:
    """The sentences as a document (empty nodes left out)."""
    doc = []
    for sentence in sentences:
        words = [Word(row[1], row[2], row[3], row[4], row[5], None, row[7], row[9]) for row in sentence.rows]
        for word, head in zip(words, sentence.heads):
            word.head = words[head - 1] if head else None
        ranges = {}
        for _, line in sentence.aside:
            first, dash, last = line.split("\t")[0].partition("-")
            if not line.startswith("#") and dash:
                ranges[int(first)] = (int(last), line.split("\t")[1])
        tokens, i = [], 1
        while i <= len(words):
            if i in ranges:
                last, form = ranges[i]
                tokens.append(Token(form, words[i - 1:last], True))
                i = last + 1
            else:
                tokens.append(Token(words[i - 1].form, [words[i - 1]], False))
                i += 1
        doc.append(tokens)
    return doc


def conllu(doc: Document) -> str:
    """The document as CoNLL-U text. Heads outside a word's sentence, extra roots and cycles (which the
    perturbations leave) are attached to the sentence's first root instead."""
    out = []
    for tokens in doc:
        words = [word for token in tokens for word in token.words]
        ids = {id(word): i for i, word in enumerate(words, start=1)}
        heads = [ids.get(id(word.head), 0) if word.head is not None else 0 for word in words]
        heads = [0 if head == i else head for i, head in enumerate(heads, start=1)]
        root = heads.index(0) + 1 if 0 in heads else 1
        heads = [root if head == 0 and i != root else head for i, head in enumerate(heads, start=1)]
        heads[root - 1] = 0
        while (cycle := find_cycle(heads)) is not None:
            heads[cycle[0] - 1] = root
        lines, i = [], 1
        for token in tokens:
            if token.multiword:
                lines.append(f"{i}-{i + len(token.words) - 1}\t{token.form}" + "\t_" * 8)
            for word in token.words:
                lines.append("\t".join((str(i), word.form, word.lemma, word.upos, word.xpos, word.feats,
                                        str(heads[i - 1]), word.deprel, "_", word.misc)))
                i += 1
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


# Perturbations: each changes a document in place at one place chosen by rng (in one sentence, so that
# thousands of them over a whole file stay fast), keeping its text.

UPOS = ("NOUN", "VERB", "ADJ", "ADP", "DET", "PRON", "PROPN", "PUNCT", "ADV", "AUX", "X")
RELATIONS = ("nsubj", "obj", "obl", "obl:arg", "nmod", "amod", "advmod", "root", "conj", "flat:name", "punct",
             "case", "det", "aux", "aux:pass", "cop", "mark", "cc", "acl:relcl", "dep", "orphan", "fixed", "xyz")


def words_of(tokens: list[Token]) -> list[Word]:
    return [word for token in tokens for word in token.words]


def redirect(tokens: list[Token], old: Word, new: Word) -> None:
    """Words of the sentence headed by ``old`` (about to go) are headed by ``new`` (``new`` itself by
    ``old``'s head). A word of another sentence headed by ``old`` is attached to its root when written."""
    for word in words_of(tokens):
        if word.head is old:
            word.head = new if new is not word else old.head


def any_word(doc: Document, rng: random.Random) -> Word:
    return rng.choice(words_of(rng.choice(doc)))


def change_upos(doc: Document, rng: random.Random) -> None:
    word = any_word(doc, rng)
    word.upos = rng.choice([tag for tag in UPOS if tag != word.upos])


def change_xpos(doc: Document, rng: random.Random) -> None:
    word = any_word(doc, rng)
    word.xpos = rng.choice([tag for tag in ("_", "N", "V|x", word.upos) if tag != word.xpos])


def change_feats(doc: Document, rng: random.Random) -> None:
    """A universal feature added or dropped, a language-specific one added (UFeats ignores it), or the
    order of the features changed (ignored too)."""
    word = any_word(doc, rng)
    feats = [] if word.feats == "_" else word.feats.split("|")
    roll = rng.random()
    if roll < 0.4:
        feats.append("Number=Dual" if "Number=Dual" not in feats else "Case=Voc")
    elif roll < 0.6 and feats:
        feats.pop(rng.randrange(len(feats)))
    elif roll < 0.8:
        feats.append("Subcat=Tran")
    else:
        feats.reverse()
    word.feats = "|".join(feats) or "_"


def change_lemma(doc: Document, rng: random.Random) -> None:
    word = any_word(doc, rng)
    word.lemma = rng.choice(("_", word.lemma + "x", word.lemma.upper(), word.form))


def change_head(doc: Document, rng: random.Random) -> None:
    """A word given another head of its sentence (or the root); the writer mends the tree."""
    words = words_of(rng.choice(doc))
    word = rng.choice(words)
    word.head = rng.choice([*words, None])


def change_deprel(doc: Document, rng: random.Random) -> None:
    word = any_word(doc, rng)
    universal = word.deprel.split(":")[0]
    if rng.random() < 0.3:
        word.deprel = universal if universal != word.deprel else universal + ":sub"  # the same universal relation
    else:
        word.deprel = rng.choice([relation for relation in RELATIONS if relation != word.deprel])


def merge_sentences(doc: Document, rng: random.Random) -> None:
    if len(doc) > 1:
        s = rng.randrange(len(doc) - 1)
        doc[s:s + 2] = [doc[s] + doc[s + 1]]


def split_sentence(doc: Document, rng: random.Random) -> None:
    s = rng.randrange(len(doc))
    if len(doc[s]) > 1:
        t = rng.randrange(1, len(doc[s]))
        doc[s:s + 1] = [doc[s][:t], doc[s][t:]]


def merge_tokens(doc: Document, rng: random.Random) -> None:
    """Two neighbouring plain tokens become one plain word (sometimes with a space inside), annotated as
    the first."""
    tokens = rng.choice(doc)
    places = [t for t in range(len(tokens) - 1) if not tokens[t].multiword and not tokens[t + 1].multiword]
    if places:
        t = rng.choice(places)
        word, gone = tokens[t].words[0], tokens[t + 1].words[0]
        if word.head is gone:
            word.head = gone.head
        redirect(tokens, gone, word)
        word.form = tokens[t].form + rng.choice(("", " ")) + tokens[t + 1].form
        tokens[t:t + 2] = [Token(word.form, [word], False)]


def split_token(doc: Document, rng: random.Random) -> None:
    """A plain token cut in two plain words (not next to a space inside it); the second hangs on the first."""
    tokens = rng.choice(doc)
    places = [(t, k) for t, token in enumerate(tokens) if not token.multiword
              for k in range(1, len(token.form)) if token.form[k - 1] != " " and token.form[k] != " "]
    if places:
        t, k = rng.choice(places)
        word = tokens[t].words[0]
        second = copy.copy(word)
        form = word.form
        word.form, second.form, second.head, second.deprel = form[:k], form[k:], word, "flat"
        tokens[t:t + 1] = [Token(word.form, [word], False), Token(second.form, [second], False)]


def remove_multiword(doc: Document, rng: random.Random) -> None:
    """A multiword token becomes one plain word with its form, annotated as its first word."""
    tokens = rng.choice(doc)
    places = [t for t, token in enumerate(tokens) if token.multiword]
    if places:
        t = rng.choice(places)
        token = tokens[t]
        word = token.words[0]
        for gone in token.words[1:]:
            if word.head is gone:
                word.head = gone.head
            redirect(tokens, gone, word)
        word.form = token.form
        tokens[t] = Token(token.form, [word], False)


def rewrite_multiword(doc: Document, rng: random.Random) -> None:
    """A multiword token with other words: one fewer, one more, or the same number with other forms
    (in another case, which the alignment ignores, or another word)."""
    tokens = rng.choice(doc)
    places = [token for token in tokens if token.multiword]
    if places:
        token = rng.choice(places)
        roll = rng.random()
        if roll < 0.3 and len(token.words) > 1:
            gone = token.words.pop()
            redirect(tokens, gone, token.words[-1])
        elif roll < 0.6:
            extra = copy.copy(token.words[-1])
            extra.form, extra.head, extra.deprel = "se", token.words[0], "expl"
            token.words.append(extra)
        else:
            word = rng.choice(token.words)
            word.form = rng.choice((word.form.upper(), word.form.capitalize(), word.form + "s", token.form))


def make_multiword(doc: Document, rng: random.Random) -> None:
    """A plain token becomes a multiword token of two words (its form cut in two), or two neighbouring
    tokens one multiword token of their words."""
    tokens = rng.choice(doc)
    if rng.random() < 0.5:
        places = [t for t, token in enumerate(tokens) if not token.multiword and len(token.form) > 1
                  and " " not in token.form]
        if places:
            t = rng.choice(places)
            word = tokens[t].words[0]
            k = rng.randrange(1, len(word.form))
            second = copy.copy(word)
            form = word.form
            word.form, second.form, second.head, second.deprel = form[:k], form[k:], word, "det"
            tokens[t] = Token(form, [word, second], True)
    else:
        places = [t for t in range(len(tokens) - 1) if " " not in tokens[t].form + tokens[t + 1].form]
        if places:
            t = rng.choice(places)
            first, second = tokens[t], tokens[t + 1]
            tokens[t:t + 2] = [Token(first.form + second.form, first.words + second.words, True)]


def split_multiword(doc: Document, rng: random.Random) -> None:
    """A multiword token cut into plain tokens, one per word, whose forms are pieces of its form."""
    tokens = rng.choice(doc)
    places = [t for t, token in enumerate(tokens) if token.multiword and 1 < len(token.words) <= len(token.form)]
    if places:
        t = rng.choice(places)
        token = tokens[t]
        cuts = sorted(rng.sample(range(1, len(token.form)), len(token.words) - 1))
        for word, a, b in zip(token.words, [0, *cuts], [*cuts, len(token.form)]):
            word.form = token.form[a:b]
        tokens[t:t + 1] = [Token(word.form, [word], False) for word in token.words]


PERTURBATIONS: dict[str, Callable[[Document, random.Random], None]] = {
    "upos": change_upos, "xpos": change_xpos, "feats": change_feats, "lemma": change_lemma, "head": change_head,
    "deprel": change_deprel, "merge_sentences": merge_sentences, "split_sentence": split_sentence,
    "merge_tokens": merge_tokens, "split_token": split_token, "remove_multiword": remove_multiword,
    "rewrite_multiword": rewrite_multiword, "make_multiword": make_multiword, "split_multiword": split_multiword,
}
# The metric each perturbation must lower, so that a test cannot pass by leaving the file as it was.
LOWERS = {
    "upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "lemma": "Lemmas", "head": "UAS", "deprel": "LAS",
    "merge_sentences": "Sentences", "split_sentence": "Sentences", "merge_tokens": "Tokens", "split_token": "Tokens",
    "remove_multiword": "Words", "rewrite_multiword": "Words", "make_multiword": "Words",
    "split_multiword": "Tokens",
}


def perturbed(sentences: list[Sentence], kinds: list[str], times: int, seed: int) -> str:
    """CoNLL-U text of the sentences after ``times`` perturbations of the given kinds, chosen at random."""
    rng = random.Random(seed)
    doc = document(sentences)
    for _ in range(times):
        PERTURBATIONS[rng.choice(kinds)](doc, rng)
    return conllu(doc)


# The official scorer, and its tables read back.

def udeval(gold: Path, system: Path, *options: str) -> str:
    """What ``udeval OPTIONS GOLD SYSTEM`` prints."""
    return subprocess.run([str(UDEVAL), *options, str(gold), str(system)], capture_output=True, text=True,
                          check=True).stdout


def table(out: str) -> dict[str, list[str]]:
    """The printed fields of each CoNLL 2018 metric in udeval's table (``-v``: precision, recall, F1,
    aligned accuracy; ``-c``: correct, gold, system, aligned)."""
    rows = {}
    for line in out.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if fields[0] in METRICS:
            rows[fields[0]] = fields[1:]
    assert list(rows) == list(METRICS), out
    return rows


def printed(scores: dict, option: str = "-v") -> dict[str, list[str]]:
    """Our scores as udeval prints them."""
    rows = {}
    for name, score in scores.items():
        if option == "-c":
            aligned = score.aligned if name == "Words" else score.aligned or ""  # udeval leaves 0 blank
            rows[name] = [str(value) for value in (score.correct, score.gold, score.system, aligned)]
        else:
            fields = [score.precision, score.recall, score.f1, score.aligned_accuracy]
            rows[name] = ["" if value is None else f"{value:.2f}" for value in fields]
    return rows


def compare(gold_path: Path, gold: list[Sentence], system_text: str, folder: Path) -> tuple[dict, str]:
    """Write the system file, score it both ways, and check that every field udeval -v prints agrees;
    our scores and udeval's output."""
    system_path = folder / "system.conllu"
    system_path.write_text(system_text, encoding="utf-8")
    ours = conll18_scores(gold, read_conll(system_path))
    out = udeval(gold_path, system_path, "-v")
    assert printed(ours) == table(out)
    return ours, out


@pytest.fixture(scope="module")
def dev() -> dict[Path, list[Sentence]]:
    """The sentences of the two dev files, read once."""
    return {PT: read_conll(PT), NL: read_conll(NL)}


@pytest.mark.parametrize("path", [PT, NL], ids=["pt_bosque", "nl_alpino"])
def test_identical_files_score_100_everywhere(dev, path: Path) -> None:
    sentences = dev[path]
    scores = conll18_scores(sentences, sentences)
    assert list(scores) == list(METRICS)
    for name, score in scores.items():
        assert (score.precision, score.recall, score.f1) == (100.0, 100.0, 100.0), name
        assert score.aligned_accuracy == (None if name in ("Tokens", "Sentences", "Words") else 100.0), name
    assert scores["Words"].gold == sum(map(len, sentences))
    assert scores["Sentences"].gold == len(sentences)
    assert scores["CLAS"].gold < scores["Words"].gold
    assert scores["MLAS"].as_dict() == {"precision": 100.0, "recall": 100.0, "f1": 100.0, "aligned_accuracy": 100.0,
                                        "correct": scores["CLAS"].gold, "gold": scores["CLAS"].gold,
                                        "system": scores["CLAS"].gold, "aligned": scores["CLAS"].gold}


@needs_udeval
@pytest.mark.parametrize("kind", list(PERTURBATIONS))
def test_each_perturbation_scores_as_udeval(dev, kind: str, tmp_path: Path) -> None:
    """40 perturbations of one kind in 60 Portuguese sentences (with multiword tokens)."""
    gold = dev[PT][:60]
    gold_path = tmp_path / "gold.conllu"
    gold_path.write_text(format_conll(gold), encoding="utf-8")
    ours, _ = compare(gold_path, gold, perturbed(gold, [kind], 40, seed=len(kind)), tmp_path)
    assert ours[LOWERS[kind]].f1 < 100.0


@needs_udeval
@pytest.mark.parametrize("path", [PT, NL], ids=["pt_bosque", "nl_alpino"])
def test_whole_dev_files_score_as_udeval(dev, path: Path, tmp_path: Path) -> None:
    """Every kind of perturbation over a whole dev file, at one place in ten words; our table is the text
    udeval prints."""
    gold = dev[path]
    times = sum(map(len, gold)) // 10
    ours, out = compare(path, gold, perturbed(gold, list(PERTURBATIONS), times, seed=7), tmp_path)
    assert all(ours[name].f1 < 100.0 for name in METRICS), path.name
    assert out.startswith(format_conll18_table(ours))


@needs_udeval
@settings(deadline=None, max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(0, 1160), count=st.integers(1, 4), gold_times=st.integers(0, 4),
       system_times=st.integers(1, 8), seed=st.integers(0, 2 ** 32 - 1))
def test_random_perturbations_count_as_udeval(dev, first, count, gold_times, system_times, seed) -> None:
    """A few sentences perturbed at random on both sides (so that both have odd tokens and multiword
    tokens): our counts are udeval's."""
    base = dev[PT][first:first + count]
    kinds = list(PERTURBATIONS)
    with tempfile.TemporaryDirectory() as folder:
        gold_path, system_path = Path(folder, "gold.conllu"), Path(folder, "system.conllu")
        gold_path.write_text(perturbed(base, kinds, gold_times, seed), encoding="utf-8")
        system_path.write_text(perturbed(base, kinds, system_times, seed + 1), encoding="utf-8")
        ours = conll18_scores(read_conll(gold_path), read_conll(system_path))
        assert printed(ours, "-c") == table(udeval(gold_path, system_path, "-c"))


GOLD = ("1\tEle\tele\tPRON\t_\tNumber=Sing\t2\tnsubj\t_\t_\n"
        "2\tfoi\tser\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3-4\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "3\tde\tde\tADP\t_\t_\t5\tcase\t_\t_\n"
        "4\to\to\tDET\t_\t_\t5\tdet\t_\t_\n"
        "5\tPorto\tPorto\tPROPN\t_\t_\t2\tobl\t_\tSpaceAfter=No\n"
        "6\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n")
TWO_ROOTS = GOLD.replace("\t_\t_\t2\tobl\t", "\t_\t_\t0\tobl\t")  # Porto attached to the root too


def test_texts_that_differ_are_refused_with_the_place() -> None:
    gold = parse_conll(GOLD + GOLD, "gold.conllu")
    system = parse_conll(GOLD + GOLD.replace("Porto", "Porta"), "system.conllu")
    message = "^system.conllu: its text differs from gold.conllu's at character 27 .*: gold sentence 2 " \
              r"\(gold.conllu:9\) has 'o.', system sentence 2 \(system.conllu:9\) has 'a.'$"
    with pytest.raises(InputError, match=message):
        conll18_scores(gold, system)
    with pytest.raises(InputError, match="at character 29 .* has the end of the text$"):
        conll18_scores(gold + gold[:1], gold)


@needs_udeval
def test_udeval_refuses_those_texts_and_trees_too(tmp_path: Path) -> None:
    gold_path = tmp_path / "gold.conllu"
    gold_path.write_text(GOLD, encoding="utf-8")
    for text, says in ((GOLD.replace("Porto", "Porta"), "differ"), (TWO_ROOTS, "multiple roots")):
        system_path = tmp_path / "system.conllu"
        system_path.write_text(text, encoding="utf-8")
        refused = subprocess.run([str(UDEVAL), "-v", str(gold_path), str(system_path)], capture_output=True,
                                 text=True)
        assert refused.returncode != 0 and says in refused.stderr


def test_spaces_inside_tokens_do_not_count_and_case_does_not_part_multiword_words() -> None:
    """A token '10 000' has the text of the tokens '10' '000'; 'DE' inside a multiword token aligns with 'de'."""
    gold = parse_conll(GOLD.replace("\tPorto\tPorto\t", "\t10 000\t10000\t"), "gold.conllu")
    system = parse_conll("1\tEle\tele\tPRON\t_\tNumber=Sing\t2\tnsubj\t_\t_\n"
                 "2\tfoi\tser\tVERB\t_\t_\t0\troot\t_\t_\n"
                 "3-4\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n"
                 "3\tDE\tde\tADP\t_\t_\t5\tcase\t_\t_\n"
                 "4\to\to\tDET\t_\t_\t5\tdet\t_\t_\n"
                 "5\t10\t10\tNUM\t_\t_\t2\tobl\t_\t_\n"
                 "6\t000\t000\tNUM\t_\t_\t5\tflat\t_\tSpaceAfter=No\n"
                 "7\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n", "system.conllu")
    scores = conll18_scores(gold, system)
    assert (scores["Tokens"].correct, scores["Tokens"].gold, scores["Tokens"].system) == (4, 5, 6)
    assert (scores["Words"].correct, scores["Words"].gold, scores["Words"].system) == (5, 6, 7)
    assert scores["UAS"].correct == 3  # the determiner and the case marker hang on an unaligned word


def test_trees_the_official_scorer_refuses() -> None:
    gold = parse_conll(GOLD, "gold.conllu")
    two_roots = parse_conll(TWO_ROOTS, "system.conllu")
    with pytest.raises(InputError, match=r"^system.conllu:1: system sentence 1 has 2 words attached to the root"):
        conll18_scores(gold, two_roots)
    scores = conll18_scores(gold, two_roots, multiple_roots=True)
    assert (scores["UAS"].correct, scores["LAS"].correct) == (5, 5)
    no_heads = "".join("\t".join(columns[:6] + ["_"] + columns[7:]) + "\n" if columns[0] else "\n"
                       for columns in (line.split("\t") for line in GOLD.splitlines()))
    with pytest.raises(InputError, match="^system.conllu:1: system sentence 1 has no heads"):
        conll18_scores(gold, parse_conll(no_heads, "system.conllu", require_heads=False))


@needs_udeval
def test_multiple_roots_score_as_udeval_allows_them(tmp_path: Path) -> None:
    gold_path, system_path = tmp_path / "gold.conllu", tmp_path / "system.conllu"
    gold_path.write_text(GOLD, encoding="utf-8")
    system_path.write_text(TWO_ROOTS, encoding="utf-8")
    out = udeval(gold_path, system_path, "-c", "--multiple-roots-okay")
    ours = conll18_scores(read_conll(gold_path), read_conll(system_path), multiple_roots=True)
    assert out.startswith(format_conll18_table(ours, counts=True))


def test_the_table_layout() -> None:
    gold = parse_conll(GOLD, "gold.conllu")
    lines = format_conll18_table(conll18_scores(gold, gold)).splitlines()
    assert lines[0] == "Metric     | Precision |    Recall |  F1 Score | AligndAcc"
    assert lines[2] == "Tokens     |    100.00 |    100.00 |    100.00 |"
    assert lines[6] == "XPOS       |    100.00 |    100.00 |    100.00 |    100.00"
    assert len(lines) == 2 + len(METRICS)
