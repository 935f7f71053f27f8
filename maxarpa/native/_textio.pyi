"""Types of the compiled maxarpa.native._textio (see _textio.pyx)."""

import numpy as np

NEED_MORE: int
AT_MARK: int
FAILED: int
DECLINED: int

class LineParser:
    def start(self, k: int, max_arpa: bool, ids: np.ndarray, values: list[np.ndarray],
              keys: np.ndarray | None = None, lower: list[np.ndarray] | None = None) -> None: ...
    def parse(self, buf: bytes, pos: int) -> tuple[int, int]: ...
    @property
    def filled(self) -> int: ...
    def words(self) -> list[bytes]: ...

def format_lines(
    k: int, keys: list[np.ndarray], firsts: list[np.ndarray], vocab_size: int, blob: bytes,
    offsets: np.ndarray, sel: np.ndarray, log10p: np.ndarray, log10bow: np.ndarray,
    mf: np.ndarray, mbow: np.ndarray,
) -> bytes: ...
def repr_log10(value: float) -> bytes: ...
def parents_in_order(rows: np.ndarray, below: np.ndarray) -> np.ndarray | None: ...
