"""Raw text to valid CoNLL-U: Punkt sentences, tokens with their offsets, taggers for exactly the tag
columns the parser reads, FORM and '# text' as the original characters, SpaceAfter=No.

Small models are trained once per module on the first sentences of the UD files (a UPOS tagger and a
parser on pt_bosque; UPOS and XPOS taggers and a parser on both columns for nl_alpino) and on
ptb-pos / wsj (an XPOS tagger and parser for English).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ud_checks import udvalidate
from egnlp.corpora import load_sentences, parse_conll, write_conll
from egnlp.corpora.sentence import COL10, CPOS, POS
from egnlp.parser.parser_model import Parser
from egnlp.pipeline import parse_text, parser_columns, tag_text, to_conllu
from egnlp.tagger import Tagger
from egnlp.tagger.text import segment, sentences_and_tokens, split_sentences, tokenize, vocabulary_abbreviations

from cli_helpers import assert_ok, error_line, run, usage_line

UD = Path(os.environ["EGNLP_UD_DIR"])

PT_TEXT = ('O Sr. Silva chegou às 9h30 ao escritório da Dra. Ana Costa, na Av. Paulista. Ele disse: "Hoje não '
           'há reunião!" Depois comprou pão, leite, café etc. e voltou para casa (sem pressa). A empresa, '
           'fundada em 1998, vende «livros», revistas e jornais; os preços sobem 3,5% ao ano. Será verdade?')
PT_SENTENCES = ["O Sr. Silva chegou às 9h30 ao escritório da Dra. Ana Costa, na Av. Paulista.",
                'Ele disse: "Hoje não há reunião!"',
                "Depois comprou pão, leite, café etc. e voltou para casa (sem pressa).",
                "A empresa, fundada em 1998, vende «livros», revistas e jornais; os preços sobem 3,5% ao ano.",
                "Será verdade?"]
EN_TEXT = ('Mr. Smith arrived at 5 p.m. in the U.S. capital, e.g. Washington.  He said: "It\'s late." '
           "Dr. J. Jones didn't agree (really).\n\nThe end is near, etc.\n")
EN_SENTENCES = ["Mr. Smith arrived at 5 p.m. in the U.S. capital, e.g. Washington.", 'He said: "It\'s late."',
                "Dr. J. Jones didn't agree (really).", "The end is near, etc."]


def _head(source: Path, target: Path, count: int) -> Path:
    blocks = [b for b in source.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    target.write_text("".join(block + "\n\n" for block in blocks[:count]), encoding="utf-8")
    return target


def _rebuilt(sentences) -> str:
    """The text the tokens say: each FORM, then no space (SpaceAfter=No) or one space."""
    out = []
    for s in sentences:
        for form, row in zip(s.forms, s.rows):
            out.append(form + ("" if row[COL10] == "SpaceAfter=No" else " "))
    return "".join(out)


def _texts(conllu: str) -> list[str]:
    return [line[len("# text = "):] for line in conllu.splitlines() if line.startswith("# text = ")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pipeline-ud")


@pytest.fixture(scope="module")
def pt(folder: Path) -> dict[str, Path]:
    """A UPOS tagger (300 pt_bosque sentences) and a parser reading UPOS (150 sentences)."""
    train = _head(UD / "pt_bosque-ud-test.conllu", folder / "pt-train.conllu", 300)
    trees = _head(UD / "pt_bosque-ud-test.conllu", folder / "pt-trees.conllu", 150)
    paths = {"train": train, "tagger": folder / "pt-upos.npz", "parser": folder / "pt-parser.npz"}
    assert_ok(run("tagger", "train", "--train", train, "--column", "upos", "--out", paths["tagger"],
                  "--passes", 10))
    assert_ok(run("parser", "train", "--train", trees, "--pos", "upos", "--out", paths["parser"], "--passes", 1))
    return paths


@pytest.fixture(scope="module")
def nl(folder: Path) -> dict[str, Path]:
    """UPOS and XPOS taggers and a parser reading both columns, trained on 100 nl_alpino sentences."""
    train = _head(UD / "nl_alpino-ud-test.conllu", folder / "nl-train.conllu", 100)
    paths = {name: folder / f"nl-{name}.npz" for name in ("upos", "xpos", "parser")}
    for column in ("upos", "xpos"):
        assert_ok(run("tagger", "train", "--train", train, "--column", column, "--out", paths[column],
                      "--passes", 5))
    assert_ok(run("parser", "train", "--train", train, "--pos", "both", "--out", paths["parser"], "--passes", 1))
    return paths


@pytest.fixture(scope="module")
def en(folder: Path) -> dict[str, Path]:
    """An XPOS (Penn Treebank) tagger on 150 ptb-pos sentences and a parser reading XPOS on 30 wsj ones."""
    paths = {"tagger": folder / "en-tagger.npz", "parser": folder / "en-parser.npz"}
    write_conll(folder / "ptb.conll", load_sentences("ptb-pos", "train")[:150])
    write_conll(folder / "wsj.conll", load_sentences("wsj", "train")[:30])
    assert_ok(run("tagger", "train", "--train", folder / "ptb.conll", "--column", "xpos", "--out", paths["tagger"],
                  "--passes", 5))
    assert_ok(run("parser", "train", "--train", folder / "wsj.conll", "--out", paths["parser"], "--passes", 2))
    return paths


# --- sentences and tokens ------------------------------------------------------------------------


def test_punkt_keeps_abbreviations_times_and_quotes() -> None:
    assert split_sentences(EN_TEXT) == EN_SENTENCES
    assert split_sentences(PT_TEXT, "pt") == PT_SENTENCES
    assert split_sentences("He lives in the U.S. He works at 9 a.m. The rest is quiet.") == [
        "He lives in the U.S.", "He works at 9 a.m.", "The rest is quiet."]
    forms = [[t.form for t in s.tokens] for s in segment(EN_TEXT)]
    assert forms[0][:6] == ["Mr.", "Smith", "arrived", "at", "5", "p.m."]
    assert {"U.S.", "e.g."} <= set(forms[0]) and forms[2][:3] == ["Dr.", "J.", "Jones"]
    assert forms[1] == ["He", "said", ":", '"', "It", "'s", "late", ".", '"']
    assert forms[3][-2:] == [",", "etc."]  # a sentence-final abbreviation keeps its period
    pt_forms = [t.form for s in segment(PT_TEXT, "portuguese") for t in s.tokens]
    assert {"Sr.", "Dra.", "Av.", "etc.", "9h30", "3,5", "«", "»", '"'} <= set(pt_forms)
    # The Treebank forms are for features: quotes become `` and '', the characters stay in `form`.
    quotes = [t for t in segment(EN_TEXT)[1].tokens if t.form == '"']
    assert [t.norm for t in quotes] == ["``", "''"]
    assert sentences_and_tokens('She said "no".')[0] == ["She", "said", "``", "no", "''", "."]
    assert tokenize("I cannot go.") == ["I", "can", "not", "go", "."]
    assert tokenize("I cannot go.", "pt") == ["I", "cannot", "go", "."]  # English contractions only for English


@pytest.mark.parametrize("text", [EN_TEXT, PT_TEXT, "  a\tb\u00a0c  \n d.e.  \n\n\n (x)y\"z\" ''w'' `v` ...\n",
                                  "no final stop", "", " \n "])
def test_tokens_are_the_characters_of_the_text(text: str) -> None:
    sentences = segment(text, "pt" if text is PT_TEXT else "en")
    pieces = []
    for s in sentences:
        assert s.text == text[s.start:s.end] == s.text.strip() and s.tokens
        assert (s.tokens[0].start, s.tokens[-1].end) == (s.start, s.end)
        for t in s.tokens:
            assert text[t.start:t.end] == t.form and t.form.strip() == t.form != ""
            pieces.append(t.form + (t.space_after or ""))
    first = sentences[0].start if sentences else len(text)
    assert text[:first].strip() == "" and text[first:] == "".join(pieces)


def test_abbreviations_from_a_vocabulary_and_languages() -> None:
    assert vocabulary_abbreviations(["Sr.", "sr.", "J.M.", "Av.", "A.", "2.", "...", "casa", "4º.", "nº.", "x"]) == {
        "sr", "j.m", "av", "nº"}
    assert split_sentences("Falou com o Cel. Souza. Saiu.", "pt") == ["Falou com o Cel.", "Souza.", "Saiu."]
    assert split_sentences("Falou com o Cel. Souza. Saiu.", "pt", ["Cel."]) == ["Falou com o Cel. Souza.", "Saiu."]
    with pytest.raises(ValueError, match="unknown language 'klingon'; Punkt languages: czech"):
        segment("x", "klingon")
    with pytest.raises(ValueError, match=r"^text holds the control character U\+0007 \(character 3\)"):
        segment("ab\x07c")


def test_a_pretrained_punkt_model_is_preferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With tokenizers/punkt_tab/LANGUAGE on NLTK's data path its parameters replace the built-in ones."""
    import nltk

    from egnlp.tagger import text

    model = tmp_path / "tokenizers" / "punkt_tab" / "portuguese"
    model.mkdir(parents=True)
    for name, content in (("collocations.tab", ""), ("sent_starters.txt", ""), ("abbrev_types.txt", "zq\n"),
                          ("ortho_context.tab", "")):
        (model / name).write_text(content, encoding="utf-8")
    sample = "O Zq. Souza chegou. O Sr. Silva saiu."
    assert split_sentences(sample, "pt") == ["O Zq.", "Souza chegou.", "O Sr. Silva saiu."]
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    text._splitter.cache_clear()
    try:
        assert split_sentences(sample, "pt") == ["O Zq. Souza chegou.", "O Sr.", "Silva saiu."]
        assert split_sentences(sample, "pt", ["Sr."]) == ["O Zq. Souza chegou.", "O Sr. Silva saiu."]
    finally:
        text._splitter.cache_clear()


def test_long_sentences_are_cut_after_a_space() -> None:
    words = ["w"] * 1234
    pieces = segment(" ".join(words) + ".")
    assert [len(s.tokens) for s in pieces] == [500, 500, 235]
    assert all(s.tokens[-1].space_after == " " for s in pieces[:-1])


# --- Portuguese: the UD pipeline ---------------------------------------------------------------


def test_portuguese_text_gives_valid_conllu_with_the_original_characters(pt: dict[str, Path], folder: Path) -> None:
    out = folder / "pt.conllu"
    result = run("parse-text", pt["tagger"], pt["parser"], "-", "--language", "pt", "-o", out, input=PT_TEXT)
    assert_ok(result)
    assert "parsed 5 sentences" in result.stderr
    checked = udvalidate(out, "pt")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    conllu = out.read_text(encoding="utf-8")
    assert _texts(conllu) == PT_SENTENCES and " ".join(_texts(conllu)) == PT_TEXT
    trees = parse_conll(conllu)
    assert _rebuilt(trees).rstrip() == PT_TEXT  # forms and SpaceAfter=No give the text back
    forms = [f for s in trees for f in s.forms]
    assert {"Sr.", "Dra.", "Av.", "etc.", "9h30", '"', "«", "»"} <= set(forms) and not {"``", "''"} & set(forms)
    assert [line for line in conllu.splitlines() if line.startswith("# sent_id")] == [
        f"# sent_id = {k}" for k in range(1, 6)]
    labels = set(Tagger.load(pt["tagger"]).labels)
    assert all(row[CPOS] in labels and row[POS] == "_" for s in trees for row in s.rows)  # UPOS only
    assert all(len(s.heads) == len(s) and s.heads.count(0) == 1 for s in trees)
    no_space = [s.forms[k] for s in trees for k, row in enumerate(s.rows) if row[COL10] == "SpaceAfter=No"]
    assert {"Costa", "reunião", "!", "«", "livros", "pressa", ")"} <= set(no_space) and "9h30" not in no_space
    # The Python pipeline writes the same.
    python = parse_text(PT_TEXT, Tagger.load(pt["tagger"]), Parser.load(pt["parser"]), language="portuguese")
    assert to_conllu(python) == conllu
    # --no-prune: the parser decodes every arc, from the CLI as from Python.
    exact = folder / "pt-exact.conllu"
    assert_ok(run("parse-text", pt["tagger"], pt["parser"], "-", "-l", "pt", "-o", exact, "--no-prune", input=PT_TEXT))
    python = parse_text(PT_TEXT, Tagger.load(pt["tagger"]), Parser.load(pt["parser"], prune=False), language="pt")
    assert exact.read_text(encoding="utf-8") == to_conllu(python)


def test_a_byte_order_mark_is_not_a_character_of_the_text(pt: dict[str, Path], folder: Path) -> None:
    """A UTF-8 byte order mark before the text (from a file or stdin, to parse-text or tagger tag, or at the
    start of a str given to the Python API) is in no FORM, no '# text' and no token."""
    text = "Ele chegou. Saiu cedo."
    source = folder / "bom.txt"
    source.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    plain = run("parse-text", pt["tagger"], pt["parser"], "-", "-l", "pt", "-q", input=text)
    assert_ok(plain)
    for args, stdin in (((source,), None), (("-",), source.read_bytes())):
        parsed = run("parse-text", pt["tagger"], pt["parser"], *args, "-l", "pt", "-q", input=stdin)
        assert_ok(parsed)
        assert parsed.stdout == plain.stdout and "\ufeff" not in parsed.stdout
        assert _texts(parsed.stdout) == ["Ele chegou.", "Saiu cedo."]
        tagged = run("tagger", "tag", pt["tagger"], *args, "-l", "pt", "-q", input=stdin)
        assert_ok(tagged)
        assert tagged.stdout.splitlines()[0].split()[0].startswith("Ele/") and "\ufeff" not in tagged.stdout
    tagger = Tagger.load(pt["tagger"])
    assert [w for w, _ in tagger.tag("\ufeff" + text, language="pt")][:2] == ["Ele", "chegou"]
    first = segment("\ufeff" + text, "pt")[0]
    assert (first.start, first.text, first.tokens[0].form, first.tokens[0].start) == (1, "Ele chegou.", "Ele", 1)
    python = parse_text("\ufeff" + text, tagger, Parser.load(pt["parser"]), language="pt")
    assert to_conllu(python) == plain.stdout


def test_tag_columns_follow_the_parser(pt: dict[str, Path], nl: dict[str, Path], en: dict[str, Path],
                                       folder: Path) -> None:
    upos, xpos, both = Tagger.load(nl["upos"]), Tagger.load(nl["xpos"]), Parser.load(nl["parser"])
    assert (upos.column, xpos.column, parser_columns(both)) == ("upos", "pos", ("upos", "pos"))
    text = "De minister zei dat het plan werkt. Hij vertrok om 9 uur."
    trees = parse_text(text, [xpos, upos], both, language="nl")
    assert [s.forms for s in trees] == [[t.form for t in s.tokens] for s in segment(text, "nl")]
    assert [s.cpos for s in trees] == upos.predict([s.forms for s in trees])
    assert [s.pos for s in trees] == xpos.predict([s.forms for s in trees])
    assert not (set(upos.labels) & set(xpos.labels))  # each column from its own tagger, none copied
    out = folder / "nl.conllu"
    assert_ok(run("parse-text", nl["xpos"], nl["parser"], "-", "--tagger", nl["upos"], "-l", "nl", "-o", out,
                  input=text))
    assert out.read_text(encoding="utf-8") == to_conllu(trees)
    checked = udvalidate(out, "nl")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    # A column the parser reads without a tagger, a tagger for a column it does not read, two for one.
    with pytest.raises(ValueError, match="the parser reads UPOS and XPOS tags .* no tagger predicts UPOS"):
        parse_text(text, xpos, both)
    assert "no tagger predicts UPOS: give one trained with 'egnlp tagger train --column upos'" in error_line(
        run("parse-text", nl["xpos"], nl["parser"], input=text))
    assert "no tagger predicts XPOS" in error_line(run("parse-text", nl["upos"], nl["parser"], input=text))
    given = run("parse-text", pt["tagger"], pt["parser"], "--tagger", nl["xpos"], input=text)  # XPOS written too
    assert_ok(given)
    assert all(row[4] != "_" for s in parse_conll(given.stdout, "out") for row in s.rows)
    assert "two taggers predict UPOS" in error_line(
        run("parse-text", pt["tagger"], pt["parser"], "--tagger", nl["upos"], input=text))
    assert "no tagger predicts UPOS" in error_line(run("parse-text", en["tagger"], pt["parser"], input=text))
    assert "unknown language 'xx'" in usage_line(run("parse-text", pt["tagger"], pt["parser"], "-l", "xx",
                                                     input=text))
    # tag_text fills the columns of the taggers it is given, and only those.
    tagged = tag_text(text, upos, language="nl")
    assert all(row[CPOS] != "_" and row[POS] == "_" for s in tagged for row in s.rows)


def test_tagger_train_on_either_ud_column(pt: dict[str, Path], nl: dict[str, Path], folder: Path) -> None:
    line = error_line(run("tagger", "train", "--train", pt["train"], "--column", "xpos", "--out", folder / "x.npz"))
    assert "token 1 has no POS tag (POSTAG / XPOS is '_')" in line
    assert line.endswith("the UPOS column is filled: train on it with --column upos")
    assert "--column: invalid choice 'lemma' (choose from xpos, upos, chunk, pos, feats, morph)" in usage_line(
        run("tagger", "train", "--train", pt["train"], "--column", "lemma", "--out", folder / "x.npz"))
    assert not (folder / "x.npz").exists()
    # The UPOS tagger tags a CoNLL-U file's UPOS column and is scored on it.
    dev = _head(UD / "nl_alpino-ud-dev.conllu", folder / "nl-dev.conllu", 40)
    pred = folder / "nl-dev-upos.conllu"
    assert_ok(run("tagger", "tag", nl["upos"], dev, "--format", "conll", "-o", pred))
    gold_rows = [s.rows for s in parse_conll(dev.read_text(encoding="utf-8"), require_heads=False)]
    pred_rows = [s.rows for s in parse_conll(pred.read_text(encoding="utf-8"), require_heads=False)]
    assert [[r[POS] for r in rows] for rows in pred_rows] == [[r[POS] for r in rows] for rows in gold_rows]
    assert [[r[CPOS] for r in rows] for rows in pred_rows] != [[r[CPOS] for r in rows] for rows in gold_rows]
    result = run("tagger", "evaluate", dev, pred, "--model", nl["upos"], "--json")
    assert_ok(result)
    assert '"column": "upos"' in result.stdout


# --- English: abbreviations and quotes ----------------------------------------------------------


def test_english_abbreviations_and_quotes(en: dict[str, Path], folder: Path) -> None:
    out = folder / "en.conllu"
    assert_ok(run("parse-text", en["tagger"], en["parser"], "-", "-o", out, input=EN_TEXT))
    conllu = out.read_text(encoding="utf-8")
    assert _texts(conllu) == EN_SENTENCES
    trees = parse_conll(conllu)
    assert [s.forms for s in trees] == [[t.form for t in s.tokens] for s in segment(EN_TEXT)]
    assert trees[1].forms == ["He", "said", ":", '"', "It", "'s", "late", ".", '"']
    tags = dict(zip(trees[1].forms[3:5], trees[1].pos[3:5]))
    assert tags['"'] == "``" and trees[1].pos[-1] == "''"  # the tagger saw the Treebank quotes
    assert all(row[CPOS] == "_" != row[POS] for s in trees for row in s.rows)  # XPOS only: no UPOS invented
    misc = [row[COL10] for s in trees for row in s.rows]
    assert misc.count("SpacesAfter=\\s\\s") == 1 and misc.count("SpacesAfter=\\n\\n") == 1
    assert misc[-1] == "SpacesAfter=\\n"
    # The validator finds no fault in the text, the forms or SpaceAfter (UPOS and DEPREL are '_' here: the
    # PTB tagger and the wsj parser have none).
    checked = udvalidate(out, "en")
    assert "METADATA" not in checked.stdout + checked.stderr and "FORMAT" not in checked.stdout + checked.stderr
