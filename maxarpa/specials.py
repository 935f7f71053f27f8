"""The special words `<s>`, `</s>`, `<unk>` and the strictness `Config` applied to a loaded model.

Why add a missing marker instead of mapping it to `<unk>` (KenLM's choice): the decoder treats
a context that starts with `<s>` as complete (no left extension exists), so if `<s>` shared
`<unk>`'s id, every context starting with an unknown word would be treated as complete and a
certificate could be false. A marker added here is its own unigram with backoff 0 and no
longer n-gram, so p(x | <s>) is the backed-off unigram p(x), and its bounds are exact.
"""

from __future__ import annotations

import numpy as np

from maxarpa.bound import check_finite
from maxarpa.checks import ngram_text
from maxarpa.config import Config, complain
from maxarpa.constants import BOS, EOS, UNK
from maxarpa.errors import FormatError, shown
from maxarpa.model import Model
from maxarpa.table import OrderNodes, Trie


def apply_config(model: Model, config: Config) -> Model:
    """Enforce `config` on a model that has its bounds: refuse, warn about or repair each
    irregular case (see `Config`). Returns `model` itself when nothing needs adding.

    Every format's load passes here, so this is also where a model whose values or bounds
    overflow natural log is refused, whatever the config (`bound.check_finite`).
    """
    path = model.source
    check_finite(model.trie, model.vocab, path)
    for k, node in enumerate(model.trie.nodes, start=1):
        bad = np.flatnonzero(node.listed & (node.log10p > 0))
        if len(bad):
            gram = ngram_text(model.vocab, node, int(bad[0]))
            message = (f"{path}: {len(bad)} listed {k}-gram(s) have log10 p > 0, the first is "
                       f"{shown(gram)} (log10 p = {float(node.log10p[bad[0]])!r})")
            complain(config.positive_log_probability, message,
                     FormatError(path, None, message.split(": ", 1)[1] +
                                 "; Config(positive_log_probability='accept') keeps them"))
    unk_log10p = (float(model.trie.nodes[0].log10p[model.unk_id]) if model.unk_id is not None
                  else config.unknown_missing_log10p)
    added: list[tuple[str, float]] = []
    for marker, present in ((BOS, model.bos_id), (EOS, model.eos_id)):
        if present is None:
            message = (f"{path}: the model has no {marker}; it is added as a unigram with "
                       f"log10 p {unk_log10p!r}, backoff 0")
            complain(config.sentence_marker_missing, message, FormatError(
                path, None, f"the model has no {marker} (KenLM refuses such models too); "
                "Config(sentence_marker_missing='accept') adds it as a unigram"))
            added.append((marker, unk_log10p))
    if model.unk_id is None and config.unknown_missing != "raise":
        complain(config.unknown_missing, f"{path}: the model has no <unk>; it is added with "
                 f"log10 p {config.unknown_missing_log10p!r}", FormatError(path, None, ""))
        added.append((UNK, config.unknown_missing_log10p))
    if not added:
        return model
    return add_unigrams(model, [w for w, _ in added], [p for _, p in added])


def adds_words(model: Model, config: Config) -> bool:
    """Whether `apply_config(model, config)` may add a word (or refuse the model for lacking
    one): a sentence marker or `<unk>` is missing and the config does not refuse that."""
    return (model.bos_id is None or model.eos_id is None
            or (model.unk_id is None and config.unknown_missing != "raise"))


def add_unigrams(model: Model, words: list[str], log10ps: list[float]) -> Model:
    """A copy of `model` with new unigrams (backoff 0, no longer n-gram) at the end of the
    vocabulary, with exact bounds.

    Keys of order k > 1 are `parent * V + first_word`; with V + d words each becomes
    `parent * (V + d) + first_word`, which keeps their sorted order. The existing bounds do
    not change: a new word has no extension, and its mbow is 0, so it never raises another
    context's maximum. Its own mf is log10 p plus the largest positive mbow of a unigram
    context other than </s> (bound.py's third term, with no extension present).
    """
    old = model.trie
    v, d = old.vocab_size, len(words)
    uni = old.nodes[0]
    contexts = np.asarray(uni.mbow, dtype=np.float64).copy()
    if model.eos_id is not None:
        contexts[model.eos_id] = -np.inf  # </s> is never a context
    best = max(0.0, float(contexts.max())) if len(contexts) else 0.0
    new_p = np.asarray(log10ps, dtype=np.float64)
    ids = np.arange(v, v + d)
    nodes = [OrderNodes(
        keys=np.arange(v + d, dtype=np.uint64),
        rows=np.r_[np.asarray(uni.rows), ids[:, None]].astype(np.int32),
        log10p=np.r_[uni.log10p, new_p], log10bow=np.r_[uni.log10bow, np.zeros(d)],
        listed=np.r_[uni.listed, np.ones(d, bool)],
        mf=np.r_[uni.mf, new_p + best], mbow=np.r_[uni.mbow, np.zeros(d)],
    )]
    for node in old.nodes[1:]:
        keys = (node.keys // np.uint64(v)) * np.uint64(v + d) + node.keys % np.uint64(v)
        nodes.append(OrderNodes(keys, np.array(node.rows), np.array(node.log10p),
                                np.array(node.log10bow), np.array(node.listed),
                                mf=np.array(node.mf), mbow=np.array(node.mbow)))
    return Model(model.vocab + list(words), Trie(v + d, nodes), model.source)
