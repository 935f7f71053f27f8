"""The training text of `train-vpylm` and `train-trf`: one whitespace-tokenised sentence a
line.

Why one reader: both commands take the same kind of file, and a user who trains one model and
then the other should meet the same rules and the same one-line errors: plain, gzip, bzip2 or
xz text, or `-` for stdin; UTF-8 (an error names the file and line); no `<s>` or `</s>` (the
trainers add them to every sentence); blank lines skipped.
"""

from __future__ import annotations

import sys

from arsdecode.errors import ModelError

MARKERS = ("<s>", "</s>")


def read_sentences(path: str) -> list[list[str]]:
    """The sentences of a training text: one per non-blank line, split on whitespace. Raises
    ModelError naming the file (and line) for text that is not UTF-8, a sentence marker in the
    text, a file that cannot be read, or no sentence at all."""
    import lzma
    import zlib

    from arsdecode.lattice.input_files import utf8_text
    from maxarpa.arpa import open_binary

    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open_binary(path) as fh:
                data = fh.read()
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
        raise ModelError(f"{name}: cannot read the training text ({err})") from None
    sentences = []
    for lineno, line in enumerate(utf8_text(data, name, ModelError).splitlines(), start=1):
        words = line.split()
        marker = next((w for w in words if w in MARKERS), None)
        if marker is not None:
            raise ModelError(f"{name}:{lineno}: {marker} in the text (the trainer adds <s> "
                             "and </s> to every sentence)")
        if words:
            sentences.append(words)
    if not sentences:
        raise ModelError(f"{name}: no sentence to train on (every line is blank)")
    return sentences
