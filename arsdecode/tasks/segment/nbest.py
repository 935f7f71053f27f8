"""The K best distinct segmentations of a text, in memory linear in the text (issue 29).

Why not the word lattice's `unique=True` k-best: that search (A* over word prefixes,
`expansion_dp._kbest_unique`) is built for lattices where many paths read the same words
(epsilon arcs, parallel arcs of one word), and on a segmentation lattice its prefixes grow
with the text: 2,000 characters took 92 MB, 20,000 over 3 GB. A segmentation lattice does not
need it. Its paths and its word sequences are one and the same: it has no epsilon arc, the
words of a path spell the text, so a word sequence fixes every cut, and between two cuts each
word has at most one arc (one word arc per LM word of that surface; an unknown arc only where
no LM word has that surface, its word the substring, which no LM word equals). So the K best
distinct *paths* (`expansion_kbest.dag_kbest` with unique=False, K scores per expansion state:
linear in the text) are the K best distinct word sequences. The only difference is the order of
exact ties: by the smaller arc-index sequence here, by the smaller word tuple there.

What a user wants is distinct segmentations (cut points): two LM words may share a surface
("its" and "it's"), so the sequences that cut the text the same way are merged, keeping the
best, and more paths are asked for until K cuts are found or the lattice has no more.
"""

from __future__ import annotations

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods.expansion_kbest import dag_kbest
from arsdecode.model.interface import ModelLike
from arsdecode.tasks.segment.lattice import segmentation_words


def best_segmentations(lm: ModelLike, wl: WordLattice, text: str,
                       k: int) -> list[tuple[list[str], float]]:
    """The `k` best distinct segmentations of `text` (its substrings, in order), each with the
    ln score of its best word sequence, best first; fewer when the text has fewer. `wl` is the
    text's `segmentation_lattice` (module docstring: one path per word sequence)."""
    want = k
    while True:
        top = dag_kbest(lm, wl, want)
        rows: list[tuple[list[str], float]] = []
        seen: set[tuple[str, ...]] = set()
        for p in top:
            words = segmentation_words(p.words, text)
            if tuple(words) not in seen:
                seen.add(tuple(words))
                rows.append((words, p.log_p))
        if len(rows) >= k or len(top) < want:
            return rows[:k]
        want *= 2
