"""Build a POS model directory from the committed hand-written fixture (no corpus, no lmplz).

The tag LMs are TnT's deleted interpolation written as exact backoff ARPA files by
data_prep.pos_data (pure Python); the emission model is `TnTEmissions` trained on the fixture.
"""

from __future__ import annotations

from pathlib import Path

from arsdecode.tasks.pos.emissions import TnTEmissions
from arsdecode.tasks.pos.evaluation import read_tagged
from data_prep.pos_data import deleted_interpolation_arpa

FIXTURE = Path(__file__).parent / "data" / "tagged_fixture.txt"


def build_fixture_models(d: Path, orders: tuple[int, ...] = (2, 3)) -> Path:
    """Write emissions.json.gz and tags.{order}.arpa into `d`; return `d`."""
    sentences = read_tagged(FIXTURE)
    TnTEmissions.train(sentences).save(d / "emissions.json.gz")
    tags = [[t for _, t in s] for s in sentences]
    for order in orders:
        deleted_interpolation_arpa(tags, order, d / f"tags.{order}.arpa")
    return d
