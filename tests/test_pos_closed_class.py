"""The shipped tagger never tags an open-class unknown word with a closed-class tag, unless the
suffix model was trained to give that tag to the word's suffix (issue 19, section F).

Closed classes: `arsdecode.tasks.pos.emissions.PENN_CLOSED_TAGS` (the Penn Treebank tags of function
words, whose members are a fixed list that training sees in full; its docstring says which tags
are left out and why).

"Trained to give it": the tag has non-zero count at the word's longest matched suffix in its
class's suffix trie (`TnTEmissions.suffix_counts`), i.e. some rare training word ending that
way had that tag. A tag that reaches an unknown word only through smoothing must never win.
Before the fix, "He visited Munich yesterday ." gave Munich/DT at n = 4, 5 (and WDT from the
trie node "ich", which only sentence-initial "Which" fed); with capitalised states and case
variants dropped but closed tags kept in the suffix model, lower-case "-ich" and "-oo" words
still came out WDT, IN or WP in 2 to 13 of these sentences per order. The shipped model leaves
closed-class tokens out of its suffix statistics (`closed_tags`), so the evidence is never
there and the check is: never.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from arsdecode.tasks.pos.emissions import PENN_CLOSED_TAGS
from arsdecode.tasks.pos.models import SHIPPED_DIR, available_orders, load_models
from arsdecode.tasks.pos.tag_many import tag_many

CLOSED = frozenset(PENN_CLOSED_TAGS)
ORDERS = available_orders(SHIPPED_DIR)
NAMED = ["Munich", "Zürich", "Blorfington", "quarbled", "Which", "Whichton", "Eachley",
         "Thosenberg", "Wherever", "Zorich", "Bruich", "snorch", "Glich"]
FRAMES = [
    "He visited X yesterday .", "The company X Insurance rose .", "X is a great place .",
    "I love the X !", "We went to X and had fun .", "They X the old house .",
    "She was very X .", "X said that it was fine .", "Did you see X ?",
    "The X of the city was closed .", "It is X to say so .", "Call X at home .",
    "My X and I left early .", "You should X it now .", "Thanks , X !",
    "the staff were X friendly", "X , the owner , helped us .", "I met X X today .",
]
SYLLABLES = ["ba", "lor", "fin", "qua", "zen", "ich", "ach", "ton", "ble", "ing", "ed", "ly",
             "ter", "mu", "zür", "wor", "nix", "ous", "ment", "gr", "st", "ea", "oo", "sh"]


def probe_words(vocabulary: frozenset[str], n: int = 160, seed: int = 19) -> list[str]:
    """`NAMED` plus `n` seeded pseudo-words, half capitalised, none known in any case."""
    rng = random.Random(seed)
    words = list(NAMED)
    while len(words) < len(NAMED) + n:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        words.append(w.capitalize() if len(words) % 2 else w)
    return [w for w in dict.fromkeys(words)
            if w not in vocabulary and w.lower() not in vocabulary]


@pytest.fixture(scope="module", params=ORDERS)
def tagged(request):
    lm, em = load_models(None, request.param)
    words = probe_words(em.vocabulary)
    sents = [frame.replace("X", w).split() for w in words for frame in FRAMES]
    res = tag_many(lm, em, sents, method="full")
    return em, sents, [em.penn_tags(t) for t in res.tags]


def test_unknown_words_get_closed_class_tags_only_with_suffix_evidence(tagged):
    em, sents, tags = tagged
    base = em.em if hasattr(em, "em") else em
    unknown = bad = 0
    for words, ts in zip(sents, tags, strict=True):
        for i, (w, t) in enumerate(zip(words, ts, strict=True)):
            if em.is_known(w) or (i == 0 and em.is_known(w.lower())):
                continue
            unknown += 1
            if t in CLOSED and not base.suffix_counts(w).get(t, 0) > 0:
                bad += 1
                print(f"{w}/{t} in: {' '.join(words)}")
    assert unknown > 3000
    assert bad == 0


def test_shipped_suffix_model_has_no_closed_class_mass():
    _, em = load_models(None, None)
    base = em.em
    assert set(base.closed_tags) == CLOSED
    for w in probe_words(em.vocabulary):
        assert not any(base.suffix_counts(w)[t] for t in CLOSED)
        assert not CLOSED & {s.split("^")[0] for s, _ in em.candidates(w)}, w


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(("sentence", "word"), [("He visited Munich yesterday .", "Munich"),
                                                ("The company Zürich Insurance rose .",
                                                 "Zürich")])
def test_capitalised_unknown_places_are_proper_nouns(order, sentence, word):
    """The issue's two sentences, through the CLI as a user runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "arsdecode", "tag", "--order", str(order), sentence],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], check=True)
    assert f" {word}/NNP " in f" {proc.stdout.strip()} "


LEXICON = {"which": {"WDT": 40}, "Which": {"WDT": 3}, "rich": {"JJ": 2}, "Munich": {"NNP": 1},
           "wich": {"WDT": 1}, "Apple": {"NNP": 2}, "apple": {"NN": 12}, "thru": {"IN": 2},
           "tru": {"JJ": 1, "IN": 1}, "blue": {"JJ": 3}, "the": {"DT": 50}, "Ohio": {"NNP": 2}}


@pytest.mark.parametrize("alpha", [10.0, None])  # None: TnT's theta, which divides by counts
def test_case_variants_and_closed_tags_leave_the_suffix_model(alpha):
    from arsdecode.tasks.pos.emissions import TnTEmissions

    plain = TnTEmissions(LEXICON, suffix_alpha=alpha)
    assert plain.suffix_counts("Zwich")["WDT"] == 3  # "Which" alone
    assert plain.suffix_counts("snich")["WDT"] == 1  # "wich"
    skip = TnTEmissions(LEXICON, suffix_alpha=alpha, skip_case_variants=True)
    assert skip.suffix_counts("Zwich")["WDT"] == 0  # "which" is frequent: "Which" left out
    assert plain.suffix_counts("Zapple")["NNP"] == 2  # node "pple": "Apple"
    assert skip.suffix_counts("Zapple")["NNP"] == 3  # "Apple" left out: the root, Munich + Ohio
    closed = TnTEmissions(LEXICON, suffix_alpha=alpha, skip_case_variants=True,
                          closed_tags=PENN_CLOSED_TAGS)
    assert closed.closed_tags == tuple(sorted(PENN_CLOSED_TAGS))
    for w in ("snich", "Zwich", "bru", "zzz", "Qqq"):
        cands = dict(closed.candidates(w))
        assert cands and not CLOSED & set(cands), w
        assert all(math.isfinite(x) for x in cands.values())
    assert closed.suffix_counts("bru") == {**dict.fromkeys(closed.tags, 0.0), "JJ": 1.0}
    assert [t for t, _ in closed.candidates("thru")] == ["IN"]  # known words keep their tags
