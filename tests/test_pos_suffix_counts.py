"""SuffixCounts (the suffix model's on-demand counts) against a plain dict of every suffix."""

from __future__ import annotations

import random

import numpy as np

from arsdecode.tasks.pos.suffix import SuffixTrie

TAGS = ("NN", "NNS", "VBD", "VBG", "JJ")


def brute_counts(rare: list[tuple[str, dict[str, int]]], max_len: int) -> dict[str, np.ndarray]:
    """The trie as TnT builds it: one count vector per suffix, word by word."""
    counts = {"": np.zeros(len(TAGS))}
    for word, tag_counts in rare:
        vec = np.zeros(len(TAGS))
        for tag, n in tag_counts.items():
            vec[TAGS.index(tag)] += n
        counts[""] += vec
        for i in range(1, min(max_len, len(word)) + 1):
            counts[word[-i:]] = counts.get(word[-i:], np.zeros(len(TAGS))) + vec
    return counts


def test_counts_membership_and_longest_suffix_equal_the_plain_trie():
    rng = random.Random(4)
    alphabet = "abcingsé\U0010ffff"  # the last one: the bisection's fallback branch
    for _ in range(30):
        max_len = rng.randint(1, 6)
        words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
                 for _ in range(rng.randint(1, 40))}
        rare = [(w, {t: rng.randint(1, 5) for t in rng.sample(TAGS, rng.randint(1, 3))})
                for w in sorted(words)]
        trie = SuffixTrie.build(TAGS, rare, theta=0.03, max_len=max_len)
        want = brute_counts(rare, max_len)
        assert set(trie.counts) == set(want)
        for suffix, vec in want.items():
            assert suffix in trie.counts
            assert np.array_equal(trie.counts[suffix], vec)  # bit for bit
        probes = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
                  for _ in range(50)]
        for q in probes:
            assert (q in trie.counts) == (q in want)
            longest = max((i for i in range(min(max_len, len(q)) + 1)
                           if all(q[len(q) - j:] in want for j in range(1, i + 1))), default=0)
            assert trie.longest_suffix(q) == longest, (q, max_len)
