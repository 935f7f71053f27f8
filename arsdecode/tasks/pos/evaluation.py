"""POS data files and tagging accuracy: the `word<TAB>tag` layout and known/unknown scores.

Why apart from `pos.py`: reading, writing and scoring tagged text is independent of the
emission model; `arsdecode.tasks.pos.emissions` re-exports these names, where they used to live.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arsdecode.errors import ObservationError

TaggedSentence = Sequence[tuple[str, str]]


def read_tagged(path: str | Path) -> list[list[tuple[str, str]]]:
    """Read `word<TAB>tag` lines, sentences separated by blank lines (CoNLL layout)."""
    sentences: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if current:
                    sentences.append(current)
                    current = []
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ObservationError(f"{path}:{lineno}: expected 'word<TAB>tag', got {line!r}")
            current.append((parts[0], parts[1]))
    if current:
        sentences.append(current)
    return sentences


def write_tagged(sentences: Iterable[TaggedSentence], path: str | Path) -> int:
    """Write sentences in the layout `read_tagged` reads; returns the token count."""
    n = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for sent in sentences:
            for word, tag in sent:
                if "\t" in word or "\n" in word or not word:
                    raise ObservationError(f"word {word!r} cannot be written in the tagged format")
                f.write(f"{word}\t{tag}\n")
                n += 1
            f.write("\n")
    return n


@dataclass(frozen=True)
class Accuracy:
    """Tagging accuracy, split by whether the (exact) word string occurred in training."""

    tokens: int
    correct: int
    known_tokens: int
    known_correct: int

    @property
    def all(self) -> float:
        return self.correct / self.tokens if self.tokens else float("nan")

    @property
    def known(self) -> float:
        return self.known_correct / self.known_tokens if self.known_tokens else float("nan")

    @property
    def unknown_tokens(self) -> int:
        return self.tokens - self.known_tokens

    @property
    def unknown(self) -> float:
        n = self.unknown_tokens
        return (self.correct - self.known_correct) / n if n else float("nan")

    def as_dict(self) -> dict[str, float | int]:
        return {
            "accuracy": self.all,
            "known_accuracy": self.known,
            "unknown_accuracy": self.unknown,
            "tokens": self.tokens,
            "known_tokens": self.known_tokens,
            "unknown_tokens": self.unknown_tokens,
        }


def score_tags(
    gold: Iterable[TaggedSentence],
    predicted: Iterable[Sequence[str]],
    vocabulary: frozenset[str] | set[str],
) -> Accuracy:
    """Compare predicted tag sequences with gold sentences; raise on a length mismatch."""
    tokens = correct = known_tokens = known_correct = 0
    for i, (g, p) in enumerate(zip(gold, predicted, strict=True)):
        if len(g) != len(p):
            raise ObservationError(f"sentence {i}: {len(p)} predicted tags for {len(g)} words")
        for (word, tag), guess in zip(g, p, strict=True):
            ok = tag == guess
            tokens += 1
            correct += ok
            if word in vocabulary:
                known_tokens += 1
                known_correct += ok
    return Accuracy(tokens, correct, known_tokens, known_correct)
