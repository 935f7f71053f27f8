"""Read NLTK corpus zips and normalise their sentences to what a phone keypad can type.

Why our own reader: the SMS demo must run offline and reproducibly, so we read the corpus zips
directly with `zipfile` (no `nltk.download`, no punkt model) and split sentences with a small,
deterministic regex splitter. The same normalisation feeds the language models and the test set,
so a test sentence is always typable and tokenised exactly like the training data.

Normalisation (one sentence -> a list of tokens):

* Unicode is folded (NFKC, accents stripped, curly quotes and dashes made ASCII); the
  mis-encoded Nixon-era files (Big5 smart quotes) are decoded as such.
* Sentences containing any digit are dropped, as in Carter et al. (2012).
* Parenthetical and bracketed asides are removed: in state_union they are stage directions such
  as "(Applause.)". All-capital lines (titles) and all-capital speaker labels ("THE PRESIDENT:")
  are removed too.
* Periods of abbreviations and initials are dropped ("Mr." -> "mr", "George W. Bush" ->
  "george w bush", "U.S." -> "us"); they neither end a sentence nor become a token.
* Words are lowercase runs of a-z. An apostrophe *inside* a word is kept ("don't", "nation's"):
  that is what a phone user types (the apostrophe sits on key 1), and it avoids splitting
  contractions into one-letter tokens that would swamp the candidate lists. Any other
  apostrophe (quotes, plural possessive "nations'") is its own token "'".
* Punctuation tokens: . , ? ! ; : ' - (runs such as "--" or "..." collapse to one token).
  Other characters (double quotes, $, &, /, ...) are treated as spaces.
"""

from __future__ import annotations

import os
import re
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPORA = ("state_union", "brown", "abc", "webtext")
PUNCTUATION = frozenset(".,?!;:'-")

_MEMBER_FILTERS: dict[str, re.Pattern[str]] = {
    "state_union": re.compile(r"\.txt$"),
    "brown": re.compile(r"(^|/)c[a-r]\d\d$"),
    "abc": re.compile(r"\.txt$"),
    "webtext": re.compile(r"\.txt$"),
}

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr gen gov sen rep prof rev hon col capt lt sgt adm cmdr maj messrs "
    "mt ft vs etc inc co corp ltd dept jan feb apr jun jul aug sep sept oct nov dec".split()
)
_UNICODE_FIXES = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "`": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2033": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2026": "...",
    }
)
_BIG5_OK = frozenset("\u2014\u2019\u2018\u201c\u201d\u2026\u3000")

_PARENS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_CAPS_LABEL = re.compile(r"^\s*[A-Z][A-Z .'-]*:\s+")
_SCRIPT_LABEL = re.compile(r"^\s*[^:.!?]{1,30}:\s+")
_BOUNDARY = re.compile(r"([.?!]+)([\"')\]]*)\s+(?=[\"'(\[]*[A-Z])")
_ACRONYM = re.compile(r"\b(?:[A-Za-z]\.){2,}")
_ABBREV_DOT = re.compile(r"\b([A-Za-z]+)\.")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*|[.,?!;:'-]")
_DIGIT = re.compile(r"\d")


class CorpusError(RuntimeError):
    """A corpus is missing, corrupt or unknown."""


def default_data_dir() -> Path:
    """`../shared/data/nltk` relative to the repository root, where the project keeps its data."""
    return (REPO_ROOT.parent / "shared" / "data" / "nltk").resolve()


def find_corpus(name: str, data_dir: str | Path | None = None) -> Path:
    """Locate corpus `name` as a zip or an unzipped directory.

    Searched in order: `data_dir` (default `default_data_dir()`) as `<name>.zip`, `<name>/`,
    `corpora/<name>.zip`, `corpora/<name>/`; then each `$NLTK_DATA` entry as `corpora/<name>.zip`
    or `corpora/<name>/`.
    """
    if name not in CORPORA:
        raise CorpusError(f"unknown corpus {name!r}; choose from {', '.join(CORPORA)}")
    roots = [Path(data_dir) if data_dir is not None else default_data_dir()]
    places = [roots[0] / f"{name}.zip", roots[0] / name]
    places += [roots[0] / "corpora" / f"{name}.zip", roots[0] / "corpora" / name]
    for entry in os.environ.get("NLTK_DATA", "").split(os.pathsep):
        if entry:
            places += [Path(entry) / "corpora" / f"{name}.zip", Path(entry) / "corpora" / name]
    for place in places:
        if place.is_file() or place.is_dir():
            return place
    raise CorpusError(
        f"corpus {name!r} not found (looked in {roots[0]} and $NLTK_DATA/corpora); "
        "pass --data-dir or set NLTK_DATA"
    )


def _decode(raw: bytes) -> str:
    """UTF-8, else Big5 when that yields only the smart punctuation seen in state_union, else
    Latin-1 (never fails)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        text = raw.decode("cp950")
        if all(ord(c) < 128 or c in _BIG5_OK for c in text):
            return text
    except UnicodeDecodeError:
        pass
    return raw.decode("latin-1")


def iter_documents(name: str, data_dir: str | Path | None = None) -> Iterator[tuple[str, str]]:
    """Yield `(member_name, text)` for every document of corpus `name`, in sorted name order."""
    where = find_corpus(name, data_dir)
    keep = _MEMBER_FILTERS[name]
    if where.is_dir():
        files = sorted(p for p in where.rglob("*") if p.is_file())
        for p in files:
            rel = p.relative_to(where).as_posix()
            if keep.search(rel):
                yield rel, _decode(p.read_bytes())
        return
    try:
        with zipfile.ZipFile(where) as zf:
            members = sorted(m for m in zf.namelist() if not m.endswith("/") and keep.search(m))
            if not members:
                raise CorpusError(f"{where}: no {name} documents inside the zip")
            for m in members:
                yield m, _decode(zf.read(m))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError) as err:
        raise CorpusError(f"{where}: corrupt or unreadable zip ({err})") from None


def fold_unicode(text: str) -> str:
    """NFKC, ASCII quotes/dashes, accents stripped, so every letter is one of a-z."""
    text = unicodedata.normalize("NFKC", text).translate(_UNICODE_FIXES)
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c))


def _is_abbreviation(text: str, dot: int) -> bool:
    """Whether the '.' at `text[dot]` closes an abbreviation or an initial (no sentence end)."""
    m = re.search(r"([A-Za-z]+)$", text[:dot])
    if m is None:
        return False
    word = m.group(1)
    return len(word) == 1 or word.lower() in _ABBREVIATIONS


def split_sentences(paragraph: str) -> list[str]:
    """Split a paragraph after . ? ! followed by space and a capital, except after abbreviations
    and initials. Deterministic and offline (no punkt), which is what reproducibility needs."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(paragraph):
        if m.group(1) == "." and _is_abbreviation(paragraph, m.start(1)):
            continue
        out.append(paragraph[start : m.end(2)].strip())
        start = m.end()
    out.append(paragraph[start:].strip())
    return [s for s in out if s]


def normalise_sentence(sentence: str) -> list[str] | None:
    """Tokens of one raw sentence, or None when it is dropped (digits, or nothing typable)."""
    text = fold_unicode(sentence)
    if _DIGIT.search(text):
        return None
    text = text.strip()
    ends_with_dot = text.rstrip("\"')] ").endswith(".")
    text = _ACRONYM.sub(lambda m: m.group(0).replace(".", "") + " ", text)
    text = _ABBREV_DOT.sub(
        lambda m: (
            m.group(1) + " "
            if len(m.group(1)) == 1 or m.group(1).lower() in _ABBREVIATIONS
            else m.group(0)
        ),
        text,
    )
    tokens: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in PUNCTUATION and (not tokens or tokens[-1] == tok):
            continue  # no leading punctuation; "--" / "..." collapse to one token
        tokens.append(tok)
    if ends_with_dot and tokens and tokens[-1] not in PUNCTUATION:
        tokens.append(".")  # the final period was eaten by an abbreviation ("... the U.S.")
    if not any(t not in PUNCTUATION for t in tokens):
        return None
    return tokens


def _paragraphs(name: str, member: str, text: str) -> Iterator[tuple[str, bool]]:
    """Yield `(paragraph, needs_splitting)` pairs after the corpus-specific clean-up."""
    for line in text.splitlines():
        if name == "brown":
            words = [w.rsplit("/", 1)[0] for w in line.split()]
            words = [w for w in words if w not in ("``", "''")]
            if words:
                yield " ".join(words), False
            continue
        line = fold_unicode(line)
        if not any(c.islower() for c in line):
            continue  # titles, headings, empty lines
        if name == "state_union":
            line = _CAPS_LABEL.sub("", line)
        elif name == "webtext" and not member.endswith(("firefox.txt", "wine.txt")):
            line = _SCRIPT_LABEL.sub("", line)
        prev = None
        while prev != line:
            prev, line = line, _PARENS.sub(" ", line)
        yield line, True


def corpus_sentences(name: str, data_dir: str | Path | None = None) -> Iterator[list[str]]:
    """Normalised token lists of every kept sentence of corpus `name`, in a fixed order."""
    for member, text in iter_documents(name, data_dir):
        for paragraph, split in _paragraphs(name, member, text):
            for raw in split_sentences(paragraph) if split else [paragraph]:
                tokens = normalise_sentence(raw)
                if tokens is not None:
                    yield tokens


def load_sentences(
    names: Sequence[str],
    data_dir: str | Path | None = None,
    progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
) -> list[list[str]]:
    """All kept sentences of `names`, concatenated in the given order.

    `progress` wraps the iteration over corpus names (e.g. a tqdm factory); every corpus is
    located first, so a missing one fails before any reading.
    """
    for name in names:
        find_corpus(name, data_dir)
    out: list[list[str]] = []
    for name in progress(names) if progress is not None else names:
        out.extend(corpus_sentences(name, data_dir))
    return out
