"""Corpus reading, keypad normalisation and the reproducible SMS test-set pipeline (real data);
the POS pipeline's binary tag models and its closed-class setting (data_prep.pos_data, on a
tiny corpus).

Why these checks: every later SMS figure depends on the normalisation (what a token is) and on
the seeded split; a silent change in either would change the experiment without any error.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import zipfile
from pathlib import Path

import pytest

from arsdecode.tasks.sms.keypad import is_typable, parse_observation, word_to_keys
from corpora import find_corpus as find_test_corpus
from corpora import needs_corpus
from data_prep.corpus import (
    PUNCTUATION,
    CorpusError,
    corpus_sentences,
    find_corpus,
    iter_documents,
    load_sentences,
    normalise_sentence,
    split_sentences,
)
from data_prep.prepare_sms import (
    EMBEDDED_PATH,
    convert_maxarpa,
    draw_test_set,
    make_embedded,
    prepare,
    split_heldout,
)

needs_data = needs_corpus("state_union")


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        ("Mr. Speaker, Members of the Congress:", "mr speaker , members of the congress :"),
        ("We must carry on -- and win!", "we must carry on - and win !"),
        ("The U.S. Congress don't agree.", "the us congress don't agree ."),
        ("Made in the U.S.", "made in the us ."),
        ("George W. Bush spoke?", "george w bush spoke ?"),
        (
            "\u201cCaf\u00e9\u201d \u2014 the nations\u2019 duty\u2026",
            "cafe - the nations ' duty .",
        ),
        ("Wait... really?!", "wait . really ? !"),
        ("'Tis true; really so.", "tis true ; really so ."),  # no leading punctuation
    ],
)
def test_normalise_sentence(raw: str, tokens: str) -> None:
    assert normalise_sentence(raw) == tokens.split()


@pytest.mark.parametrize("raw", ["In 1945 we won.", "It cost $5.", "Half: \u00bd.", "!!", "   "])
def test_dropped_sentences(raw: str) -> None:
    assert normalise_sentence(raw) is None


def test_split_sentences() -> None:
    text = "Mr. Speaker, I am here. Today the U.S. Senate met. Did it? Yes! Gen. Marshall spoke."
    assert split_sentences(text) == [
        "Mr. Speaker, I am here.",
        "Today the U.S. Senate met.",
        "Did it?",
        "Yes!",
        "Gen. Marshall spoke.",
    ]


def test_corpus_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NLTK_DATA", raising=False)
    with pytest.raises(CorpusError, match="corpus 'abc' not found") as info:
        find_corpus("abc", tmp_path)
    assert "\n" not in str(info.value)
    with pytest.raises(CorpusError, match="unknown corpus"):
        find_corpus("gutenberg", tmp_path)
    (tmp_path / "webtext.zip").write_bytes(b"this is not a zip file")
    with pytest.raises(CorpusError, match="corrupt"):
        list(iter_documents("webtext", tmp_path))
    with pytest.raises(CorpusError, match="not found"):  # fails before reading anything
        load_sentences(["webtext", "abc"], tmp_path)


def test_unzipped_brown_directory(tmp_path: Path) -> None:
    (tmp_path / "brown").mkdir()
    (tmp_path / "brown" / "ca01").write_text(
        "\n\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n\tIn/in 1913/cd it/pps ran/vbd ./.\n"
    )
    (tmp_path / "brown" / "README").write_text("not a document\n")
    assert list(corpus_sentences("brown", tmp_path)) == [["the", "jury", "said", "no", "."]]


@needs_corpus("abc")
def test_nltk_data_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "abc.zip").symlink_to(find_test_corpus("abc"))
    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    assert find_corpus("abc", tmp_path / "elsewhere") == tmp_path / "corpora" / "abc.zip"


@needs_corpus("brown")
def test_real_brown_first_sentence() -> None:
    first = next(iter(corpus_sentences("brown")))
    assert " ".join(first) == (
        "the fulton county grand jury said friday an investigation of atlanta's recent primary"
        " election produced no evidence that any irregularities took place ."
    )


@pytest.fixture(scope="module")
def state_union() -> list[list[str]]:
    path = find_test_corpus("state_union")
    if path is None:
        pytest.skip("NLTK corpus state_union not found in ../shared/data/nltk or "
                    "$NLTK_DATA/corpora")
    return load_sentences(["state_union"], path.parent)


def test_state_union_tokens_are_typable(state_union: list[list[str]]) -> None:
    assert len(state_union) > 14_000
    assert "applause" not in {w for s in state_union[-3000:] for w in s}  # stage directions
    for s in state_union:
        assert s and s[0] not in PUNCTUATION
        for w in s:
            assert is_typable(w) and (w in PUNCTUATION or w[0].isalpha()), (w, s)
    path = find_test_corpus("state_union")
    if path.is_dir():
        assert len(list(path.rglob("*.txt"))) == 65
    else:
        with zipfile.ZipFile(path) as zf:
            assert len([m for m in zf.namelist() if m.endswith(".txt")]) == 65


def test_test_set_is_reproducible(state_union: list[list[str]]) -> None:
    train, held = split_heldout(state_union, seed=0)
    assert len(held) == round(0.1 * len(state_union))
    assert len(train) + len(held) == len(state_union)
    assert split_heldout(state_union, seed=0) == (train, held)
    assert split_heldout(state_union, seed=1)[1] != held
    vocab = {w for s in train for w in s}
    a = draw_test_set(held, vocab, seed=0, per_length=20, max_length=6)
    assert a == draw_test_set(held, vocab, seed=0, per_length=20, max_length=6)
    assert a != draw_test_set(held, vocab, seed=1, per_length=20, max_length=6)
    ids = [r["id"] for r in a]
    assert len(set(ids)) == len(ids)
    held_set = {tuple(s) for s in held}
    for r in a:
        assert tuple(r["words"]) in held_set and 1 <= len(r["words"]) <= 6
        obs = parse_observation(r["observation"])
        assert [len(o) for o in obs] == [len(word_to_keys(w)) for w in r["words"]]
        assert r["oov"] == sum(w not in vocab for w in r["words"])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_data
def test_pipeline_end_to_end(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        manifest = prepare(tmp_path / name, orders=[2], seed=3, maxarpa=False,
                           data_dir=find_test_corpus("state_union").parent)
        runs.append(manifest)
    assert runs[0] == runs[1]
    for f in ("train.txt", "heldout.txt", "lm.2.arpa", "test.jsonl", "manifest.json"):
        assert _digest(tmp_path / "a" / f) == _digest(tmp_path / "b" / f), f
    m = runs[0]
    assert m["models"]["2"]["ngrams"][1] == m["vocab_size"]
    lines = (tmp_path / "a" / "test.jsonl").read_text().splitlines()
    assert len(lines) == m["test_set"]["total"] > 0
    rec = json.loads(lines[0])
    assert set(rec) == {"id", "words", "observation", "oov"}
    assert sum(m["test_set"]["per_length"].values()) == len(lines)


@needs_data
def test_embedded_model_regenerates_identically(tmp_path: Path) -> None:
    if not EMBEDDED_PATH.is_file():
        pytest.skip("embedded ARPA model not present (converted or removed)")
    info = make_embedded(tmp_path / "m.arpa.gz", find_test_corpus("state_union").parent)
    assert _digest(tmp_path / "m.arpa.gz") == _digest(EMBEDDED_PATH)
    assert info["total_ngrams"] <= 150_000 and set(info["ngrams"]) == {1, 2, 3, 4, 5}


@needs_data
def test_first_state_union_document() -> None:
    # Reading the first state_union document must not read the whole archive.
    data_dir = find_test_corpus("state_union").parent
    ((name, text),) = itertools.islice(iter_documents("state_union", data_dir), 1)
    assert name == "state_union/1945-Truman.txt" and "Mr. Speaker" in text


MRG = """\
( (S (NP-SBJ (DT The) (NN dog)) (VP (VBD barked)) (. .)) )
( (S (NP-SBJ (NNP Rex)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )
"""
CONLL = ("A DT B-NP\ncat NN I-NP\nsat VBD B-VP\n. . O\n\n"
         "The DT B-NP\ndog NN I-NP\nran VBD B-VP\n. . O\n")


def tiny_nltk_dir(tmp_path: Path) -> Path:
    """An NLTK data directory holding a one-file treebank and a tiny CoNLL-2000, as
    `data_prep.pos_data` reads them."""
    data = tmp_path / "nltk"
    (data / "treebank" / "combined").mkdir(parents=True)
    (data / "treebank" / "combined" / "wsj_0001.mrg").write_text(MRG, encoding="utf-8")
    (data / "conll2000").mkdir()
    (data / "conll2000" / "train.txt").write_text(CONLL * 3, encoding="utf-8")
    (data / "conll2000" / "test.txt").write_text(CONLL, encoding="utf-8")
    return data


def test_pos_data_writes_the_binary_tag_models_tag_prefers(tmp_path: Path) -> None:
    """A user who follows the README (`python -m data_prep.pos_data --out DIR`, then
    `arsdecode tag --models DIR`) must get the binary tag LM, not parse a text model."""
    from arsdecode.tasks.pos.models import tag_lm_path
    from data_prep.pos_data import prepare as prepare_pos
    from maxarpa import load

    data = tiny_nltk_dir(tmp_path)
    out = tmp_path / "pos"
    summary = prepare_pos(out, data, orders=[2, 3])
    for n in (2, 3):
        npz = out / f"tags.{n}.npz"
        assert summary["lms"][str(n)]["binary"] == str(npz)
        assert tag_lm_path(out, n) == npz
        binary, text = load(npz), load(out / f"tags.{n}.maxarpa")
        assert binary.order == text.order == n
        for ctx, w in ((["<s>"], "DT"), (["DT"], "NN"), (["NN", "VBD"], "."), (["VBD"], "DT")):
            assert binary.log10p(w, ctx) == text.log10p(w, ctx)
            # format 3 stores the bounds as float32 rounded up (docs/max-arpa-format.md)
            bound, exact = binary.max_log10p(w, ctx), text.max_log10p(w, ctx)
            assert exact <= bound <= exact + 1e-6 * max(1.0, abs(exact))
    assert not list(out.glob("*.tmp"))


def test_pos_data_keeps_closed_class_tags_from_unknown_words_unless_asked(tmp_path: Path) -> None:
    """By default the WSJ emissions leave closed-class tags out of the suffix model (as the
    shipped EWT tagger): rare "The", "a", "A" must not make every unknown word a DT candidate
    (out of domain that multiplied the merged DP's pairs ~4x). --all-tags-for-unknown restores
    the paper's plain TnT suffix model, and summary.json records which one was built."""
    from arsdecode.tasks.pos.emissions import PENN_CLOSED_TAGS, TnTEmissions
    from data_prep.pos_data import main as pos_main

    data = tiny_nltk_dir(tmp_path)
    closed = set(PENN_CLOSED_TAGS)
    unknown = ("zzz", "Qqq", "barking", "Fido")
    found = {}
    for name, flag in (("default", []), ("all", ["--all-tags-for-unknown"])):
        out = tmp_path / name
        assert pos_main(["--out", str(out), "--data-dir", str(data), "--orders", "2", *flag]) == 0
        em = TnTEmissions.load(out / "emissions.json.gz")
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        assert summary["emission_settings"]["closed_tags"] == list(em.closed_tags)
        assert not any(em.is_known(w) for w in unknown)
        found[name] = {w: {t for t, _ in em.candidates(w)} for w in unknown}
        assert all(found[name].values())
        assert [t for t, _ in em.candidates("The")] == ["DT"]  # known words keep their tags
    assert not any(closed & tags for tags in found["default"].values())
    assert all("DT" in tags for tags in found["all"].values())  # rare "The", "a", "A" are DT


def test_sms_models_are_converted_in_process(tmp_path: Path) -> None:
    """prepare_sms converts with maxarpa.convert (no CLI): the MAX-ARPA file answers as the
    ARPA does, and a model maxarpa refuses is a "failed" status with no output, not a crash."""
    import maxarpa
    from arpa_fixtures import VALID

    arpa, out = tmp_path / "lm.arpa", tmp_path / "lm.maxarpa"
    arpa.write_text(VALID)
    assert convert_maxarpa(arpa, out) == "ok"
    a, b = maxarpa.load(arpa), maxarpa.load(out)
    assert a.vocab == b.vocab
    for w in a.vocab:
        assert (a.log10p(w, ["<s>"]), a.max_log10p(w, [])) == (b.log10p(w, ["<s>"]),
                                                                b.max_log10p(w, []))
    bad = tmp_path / "bad.arpa"
    bad.write_text(VALID.replace("\\end\\", ""))
    status = convert_maxarpa(bad, tmp_path / "bad.maxarpa")
    assert status.startswith("failed (FormatError: "), status
    assert not (tmp_path / "bad.maxarpa").exists()
