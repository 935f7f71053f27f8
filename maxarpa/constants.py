"""The one place for the symbols and log-base constants shared by maxarpa and arsdecode.

Why one place: ARPA/KenLM speak log10 while arsdecode reports natural logs; mixing the two
silently is the easiest bug to make in this field, so every conversion goes through here.
"""

import math

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
UNK_CAPITALS = "<UNK>"
"""CMU-Cambridge writes the unknown word in capitals; it counts as <unk> when <unk> is absent."""

LN10 = math.log(10.0)
"""Multiply a log10 value by this to get a natural-log value."""

NEG_INF = float("-inf")
"""Log of zero. We use exactly -inf, never a large negative sentinel."""

ARPA_IMPOSSIBLE = -99.0
"""SRILM writes log10 p(<s>) = -99 to mean 'impossible'. We keep -99 as the number it is, as
KenLM does, so scores agree with KenLM; the literal `-inf` is read as NEG_INF."""
