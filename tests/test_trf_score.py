"""`sentence_log_scores` against KenLM's own whole-sentence scores (with <s> and </s>)."""

from __future__ import annotations

import math

import kenlm
import pytest

from arsdecode.api import DATA_DIR, DEFAULT_LM, load_lm
from arsdecode.model import as_target_model
from arsdecode.tasks.trf.score import sentence_log_scores


@pytest.fixture(scope="module")
def models():
    return (as_target_model(load_lm(DEFAULT_LM)),
            kenlm.Model(str(DATA_DIR / "state_union.5gram.arpa.gz")))


def test_scores_equal_kenlm_with_sentence_markers(models):
    lm, ken = models
    texts = ["the state of the union is strong", "we will", "", "america",
             "of of of of of of of the the"]
    ours = sentence_log_scores(lm, [lm.ids(t.split()) if t else [] for t in texts])
    for got, text in zip(ours, texts, strict=True):
        assert got == pytest.approx(ken.score(text, bos=True, eos=True) * math.log(10),
                                    abs=1e-4)


def test_no_sentences_gives_an_empty_array(models):
    assert sentence_log_scores(models[0], []).shape == (0,)
