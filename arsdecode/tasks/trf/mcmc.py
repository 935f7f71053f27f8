"""The trans-dimensional MCMC sampler of random-field LM training (Wang, Ou and Tan, TPAMI
2018 / ICML 2015): the baseline that exact ARS samples are compared against (issue 22, target 3).

Why a Markov chain at all: random-field training needs samples from the joint over lengths and
sentences

    p(l, x) ∝ exp(log_pi[l] - zeta[l] + score(x))          (natural log, |x| = l)

where score is the `LogLinearLM`'s unnormalised ln score of `<s> x </s>`, log_pi the length
prior and zeta[l] the current estimate of ln Z_l. The paper draws them with a chain over
(l, x); one `sweep` of a chain is

1. a length move (trans-dimensional, Metropolis-Hastings), then
2. a Gibbs update of every position 0 .. l-1 in turn, each from its exact conditional.

Both leave p(l, x) invariant, so their composition does (and the Gibbs steps, with every
word possible, make the chain irreducible at each length).

**Lengths.** The allowed lengths are those with finite log_pi; they must be one run
lmin .. lmax (a gap could never be crossed by +-1 moves; length 0 is never allowed). The length
kernel Gamma is the paper's: Gamma(l, l+1) = Gamma(l, l-1) = 1/2 inside, Gamma(lmin, lmin+1) =
Gamma(lmax, lmax-1) = 1 at the ends (with lmin = lmax there is no length move).

**Birth** (l -> l+1, x' = x w, the word appended at the END): w is drawn from the model's exact
conditional at the new last position given x, over the whole candidate vocabulary,

    Q(w | x) = exp(f(x, w)) / sum_v exp(f(x, v)),
    f(x, v)  = ln phi(v | <s> x) + ln phi(</s> | <s> x v)

(phi the model's factors: appending v changes only the factor of v itself and the `</s>` one).
The reverse move, death from x', proposes l and deletes the last word (probability
Gamma(l+1, l)). With P(l, x) = exp(log_pi[l] - zeta[l]) exp(score(x)), the MH ratio is

    A_birth = [Gamma(l+1, l) P(l+1, x w)] / [Gamma(l, l+1) P(l, x) Q(w | x)]
            = Gamma(l+1, l) / Gamma(l, l+1) * exp(log_pi[l+1] - zeta[l+1] - log_pi[l] + zeta[l])
              * exp(G(x))

    G(y) = ln sum_v exp(f(y, v)) - ln phi(</s> | <s> y)

since score(x w) - score(x) = f(x, w) - ln phi(</s> | <s> x), so P(l+1, x w) / Q(w | x) does not
depend on w. Accepted with probability min(1, A_birth); w is therefore drawn only when the move
is accepted (the same kernel: acceptance does not depend on w).

**Death** (l -> l-1, x = y w -> y): the reverse of a birth from y, so

    A_death = [Gamma(l-1, l) P(l-1, y) Q(w | y)] / [Gamma(l, l-1) P(l, y w)]
            = Gamma(l-1, l) / Gamma(l, l-1) * exp(log_pi[l-1] - zeta[l-1] - log_pi[l] + zeta[l])
              * exp(-G(y))

Then p(x) P(x -> x w) = p(x w) P(x w -> x) holds by construction (detailed balance;
`length_move_probability` exposes both sides for the tests).

**Gibbs** at position i: the factors that depend on x_i are those of positions i .. i+n-1 of
`<s> x </s>`'s predicted tokens (n = model.order, `</s>` included when within reach), so the
conditional over the V candidates is the sum of those <= n factors, computed for all V (and
every chain at that position) in one `model.log_prob` call, and sampled by the Gumbel-max trick.

**Start.** Each chain starts at a length drawn from pi (normalised over the allowed lengths) and
words drawn left to right from the first component (the base n-gram) restricted to the
candidates (no `</s>` before the drawn length): a valid, cheap start; the chains are kept
across `set_model`.

The candidates are `model.vocabulary()` (every word but `<s>` and `</s>`, `<unk>` included if
the model has it), as in `arsdecode.api.fixed_length_lattice`, so these samples and the exact
per-length ARS samples follow the same distribution.
"""

from __future__ import annotations

import math

import numpy as np

from arsdecode.errors import OptionError
from arsdecode.model import LogLinearLM, TargetModel

_MAX_ROWS = 1 << 20
"""About how many (context, word) rows one Gibbs `log_prob` call may take (~8 bytes * n each)."""


class TransDimensionalSampler:
    """`chains` Markov chains over (length, sentence) targeting
    p(l, x) ∝ exp(log_pi[l] - zeta[l] + score(x)) (module docstring).

    `log_pi[l]` = ln pi_l for l = 0 .. Lmax (-inf for a length not allowed, length 0 always
    -inf; the finite ones must be consecutive). `states` holds each chain's sentence (int64
    word ids, no `<s>`/`</s>`).
    """

    def __init__(self, model: LogLinearLM, log_pi: np.ndarray, chains: int,
                 rng: np.random.Generator) -> None:
        self.log_pi = np.asarray(log_pi, dtype=np.float64)
        if self.log_pi.ndim != 1 or len(self.log_pi) < 2:
            raise OptionError("log_pi must be a 1-D array over lengths 0 .. Lmax (Lmax >= 1)")
        if np.isnan(self.log_pi).any() or (self.log_pi == math.inf).any():
            raise OptionError("log_pi holds NaN or +inf")
        if self.log_pi[0] != -math.inf:
            raise OptionError("log_pi[0] must be -inf (the empty sentence is not allowed)")
        allowed = np.flatnonzero(np.isfinite(self.log_pi))
        if len(allowed) == 0:
            raise OptionError("log_pi allows no length")
        if allowed[-1] - allowed[0] + 1 != len(allowed):
            raise OptionError("the allowed lengths (finite log_pi) must be consecutive: a "
                              "gap cannot be crossed by +-1 length moves")
        if int(chains) < 1:
            raise OptionError(f"chains must be >= 1, not {chains}")
        self.lmin, self.lmax = int(allowed[0]), int(allowed[-1])
        self.chains = int(chains)
        self.rng = rng
        self.model: LogLinearLM
        self.candidates = np.zeros(0, dtype=np.int64)
        self.states: list[np.ndarray] = []
        self.set_model(model)
        self.states = self._initial_states()

    # ----- public -----------------------------------------------------------------------------
    def set_model(self, model: LogLinearLM) -> None:
        """Use new weights from now on; the chains keep their sentences. The candidate
        vocabulary must not change (the chains hold its ids)."""
        candidates = np.asarray(model.ids(model.vocabulary()), dtype=np.int64)
        if self.states and not np.array_equal(candidates, self.candidates):
            raise OptionError("set_model: the new model's vocabulary differs from the chains'")
        self.model = model
        self.candidates = candidates
        self.n = max(int(model.order), 1)

    def sweep(self, zeta: np.ndarray) -> list[np.ndarray]:
        """One sweep of every chain under ln Z estimates `zeta` (one per length 0 .. Lmax): a
        length move, then Gibbs over every position. Returns the new `states` (fresh arrays;
        the length of a sentence is its len)."""
        zeta = self._check_zeta(zeta)
        if len(self.states) != self.chains or any(
                not self.lmin <= len(s) <= self.lmax for s in self.states):
            raise OptionError(f"states must be {self.chains} sentences of lengths "
                              f"{self.lmin} .. {self.lmax}")
        pad, lengths = self._padded(self.states)
        # Chains are independent of each other, so they go through log_prob together, in
        # chunks of at most about _MAX_ROWS rows (a chain takes up to (n, V) of them).
        chunk = max(1, _MAX_ROWS // (self.n * len(self.candidates)))
        for start in range(0, self.chains, chunk):
            self._length_move(pad, lengths, zeta, np.arange(start, min(start + chunk,
                                                                       self.chains)))
        for i in range(self.lmax):
            active = np.flatnonzero(lengths > i)
            if len(active) == 0:
                break
            for start in range(0, len(active), chunk):
                rows = active[start:start + chunk]
                logits = self._gibbs_logits(pad, lengths, rows, i)
                pad[rows, i + self.n] = self.candidates[self._gumbel_argmax(logits)]
        self.states = [pad[c, self.n:self.n + lengths[c]].copy() for c in range(self.chains)]
        return self.states

    # ----- exposed for the tests (the same code paths the sweep uses) --------------------------
    def gibbs_conditional(self, sentence: np.ndarray, position: int) -> np.ndarray:
        """ln of the exact Gibbs conditional of word `position` of `sentence` over
        `self.candidates` (normalised), as the sweep computes it."""
        pad, lengths = self._padded([np.asarray(sentence, dtype=np.int64)])
        if not 0 <= position < lengths[0]:
            raise OptionError(f"position {position} outside a sentence of length {lengths[0]}")
        logits = self._gibbs_logits(pad, lengths, np.array([0]), position)[0]
        return logits - _logsumexp(logits[None, :])[0]

    def length_move_probability(self, sentence: np.ndarray, target: np.ndarray,
                                zeta: np.ndarray) -> float:
        """The probability that the length move takes `sentence` to `target` (a birth:
        target = sentence + one word; a death: target = sentence minus its last word; 0 for
        any other pair), computed by the sweep's own functions."""
        zeta = self._check_zeta(zeta)
        x = np.asarray(sentence, dtype=np.int64)
        y = np.asarray(target, dtype=np.int64)
        if len(y) == len(x) + 1 and np.array_equal(y[:-1], x):
            up, prefix = True, x
        elif len(y) == len(x) - 1 and np.array_equal(x[:-1], y):
            up, prefix = False, y
        else:
            return 0.0
        length = np.array([len(x)])
        up_arr = np.array([up])
        if self._log_gamma(length, length + (1 if up else -1))[0] == -math.inf:
            return 0.0
        pad, _ = self._padded([x])
        log_f, g = self._end_terms(pad, np.array([0]), np.array([len(prefix)]))
        log_a = self._log_accept(length, up_arr, g, zeta)[0]
        log_p = self._log_gamma(length, length + (1 if up else -1))[0] + min(0.0, log_a)
        if up:
            word = int(np.flatnonzero(self.candidates == y[-1])[0])
            log_p += log_f[0, word] - _logsumexp(log_f)[0]
        return math.exp(log_p)

    # ----- internals --------------------------------------------------------------------------
    def _check_zeta(self, zeta: np.ndarray) -> np.ndarray:
        z = np.asarray(zeta, dtype=np.float64)
        if z.shape != self.log_pi.shape:
            raise OptionError(f"zeta has shape {z.shape}, log_pi {self.log_pi.shape}")
        if not np.isfinite(z[self.lmin:self.lmax + 1]).all():
            raise OptionError("zeta must be finite at every allowed length")
        return z

    def _padded(self, sentences: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Sentences as rows `-1 * (n-1), <s>, x, </s>, -1 ...` of one (K, Lmax + 2n) array,
        so that the n tokens ending at `<s> x </s>`'s index j + 1 (the factor of position j:
        context and predicted word) are columns j + 1 .. j + n; and their lengths. (The Gibbs
        step reads windows up to n - 1 past `</s>`, masked out, hence the width.)"""
        n = self.n
        pad = np.full((len(sentences), self.lmax + 2 * n), -1, dtype=np.int64)
        pad[:, n - 1] = self.model.bos
        lengths = np.array([len(s) for s in sentences], dtype=np.int64)
        for c, s in enumerate(sentences):
            pad[c, n:n + len(s)] = s
        pad[np.arange(len(sentences)), n + lengths] = self.model.eos
        return pad, lengths

    def _gibbs_logits(self, pad: np.ndarray, lengths: np.ndarray, rows: np.ndarray,
                      i: int) -> np.ndarray:
        """(len(rows), V): per chain and candidate w, the sum of the factors of positions
        i .. min(i + n - 1, l) with x_i = w (the unnormalised ln conditional)."""
        n, cand = self.n, self.candidates
        a, v = len(rows), len(cand)
        t = np.arange(n)
        valid = (i + t)[None, :] <= lengths[rows][:, None]                       # (A, n)
        cols = (i + 1 + t)[:, None] + np.arange(n)[None, :]                      # (n, n)
        windows = pad[rows[:, None, None], cols[None, :, :]]                     # (A, n, n)
        grid = np.repeat(windows[:, :, None, :], v, axis=2)                      # (A, n, V, n)
        for k in range(n):
            grid[:, k, :, n - 1 - k] = cand[None, :]
        flat = grid[valid].reshape(-1, n)
        lp = self.model.log_prob(flat[:, :n - 1], flat[:, n - 1])
        out = np.zeros((a, n, v))
        out[valid] = lp.reshape(-1, v)
        return out.sum(axis=1)

    def _end_terms(self, pad: np.ndarray, rows: np.ndarray, prefix: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """For each chain's prefix y (its first `prefix` words): f(y, v) for every candidate
        v, (A, V), and G(y) (module docstring), (A,). One log_prob call."""
        n, cand = self.n, self.candidates
        a, v = len(rows), len(cand)
        ctx = pad[rows[:, None], (prefix + 1)[:, None] + np.arange(n - 1)[None, :]]  # (A, n-1)
        ctx_v = np.repeat(ctx, v, axis=0)                                        # (A*V, n-1)
        words_v = np.tile(cand, a)
        after = np.concatenate([ctx_v, words_v[:, None]], axis=1)[:, 1:]        # (A*V, n-1)
        eos = np.full(a, self.model.eos, dtype=np.int64)
        contexts = np.concatenate([ctx_v, after, ctx])
        words = np.concatenate([words_v, np.full(a * v, self.model.eos), eos])
        lp = self.model.log_prob(contexts, words)
        log_f = (lp[:a * v] + lp[a * v:2 * a * v]).reshape(a, v)
        with np.errstate(invalid="ignore"):
            g = _logsumexp(log_f) - lp[2 * a * v:]
        return log_f, g

    def _log_gamma(self, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
        """ln Gamma(frm, to) of the length kernel (module docstring), elementwise."""
        up = to == frm + 1
        p_up = np.where(frm == self.lmin, 1.0, np.where(frm == self.lmax, 0.0, 0.5))
        if self.lmin == self.lmax:
            p_up = np.zeros_like(p_up)
        p = np.where(up, p_up, np.where(to == frm - 1, 1.0 - p_up, 0.0))
        if self.lmin == self.lmax:
            p = np.zeros_like(p)
        with np.errstate(divide="ignore"):
            return np.log(p)

    def _log_accept(self, lengths: np.ndarray, up: np.ndarray, g: np.ndarray,
                    zeta: np.ndarray) -> np.ndarray:
        """ln A_birth (where `up`) or ln A_death of the module docstring; `g` is G of the
        shorter sentence of the pair."""
        new = np.where(up, lengths + 1, lengths - 1)
        safe_new = np.clip(new, 0, len(self.log_pi) - 1)
        prior = self.log_pi - zeta
        with np.errstate(invalid="ignore"):
            return (self._log_gamma(new, lengths) - self._log_gamma(lengths, new)
                    + prior[safe_new] - prior[lengths] + np.where(up, g, -g))

    def _length_move(self, pad: np.ndarray, lengths: np.ndarray, zeta: np.ndarray,
                     rows: np.ndarray) -> None:
        """One MH length move of each chain in `rows`, in place on `pad` and `lengths`."""
        if self.lmin == self.lmax:
            return
        length = lengths[rows]
        p_up = np.exp(self._log_gamma(length, length + 1))
        up = self.rng.random(len(rows)) < p_up
        log_f, g = self._end_terms(pad, rows, np.where(up, length, length - 1))
        log_a = self._log_accept(length, up, g, zeta)
        with np.errstate(divide="ignore", invalid="ignore"):
            accept = np.log(self.rng.random(len(rows))) < log_a
        born = np.flatnonzero(accept & up)
        died = np.flatnonzero(accept & ~up)
        if len(born):
            births = rows[born]
            at = self.n + lengths[births]
            pad[births, at] = self.candidates[self._gumbel_argmax(log_f[born])]
            pad[births, at + 1] = self.model.eos
            lengths[births] += 1
        if len(died):
            deaths = rows[died]
            at = self.n + lengths[deaths]
            pad[deaths, at - 1] = self.model.eos
            pad[deaths, at] = -1
            lengths[deaths] -= 1

    def _gumbel_argmax(self, logits: np.ndarray) -> np.ndarray:
        """Per row, an index drawn with probability ∝ exp(logits) (Gumbel-max)."""
        return np.argmax(logits + self.rng.gumbel(size=logits.shape), axis=1)

    def _initial_states(self) -> list[np.ndarray]:
        """Lengths from pi over the allowed lengths; words left to right from the base n-gram
        (the first component) over the candidates."""
        base: TargetModel = self.model.components[0]
        allowed = np.arange(self.lmin, self.lmax + 1)
        weights = np.exp(self.log_pi[allowed] - self.log_pi[allowed].max())
        lengths = self.rng.choice(allowed, size=self.chains, p=weights / weights.sum())
        width = max(base.order - 1, 0)
        hist = np.full((self.chains, width + self.lmax + 1), -1, dtype=np.int64)
        hist[:, width] = self.model.bos
        cand, v = self.candidates, len(self.candidates)
        for i in range(self.lmax):
            rows = np.flatnonzero(lengths > i)
            if len(rows) == 0:
                break
            ctx = hist[rows, i + 1:i + 1 + width]
            lp = base.log_prob(np.repeat(ctx, v, axis=0), np.tile(cand, len(rows)))
            hist[rows, width + 1 + i] = cand[self._gumbel_argmax(lp.reshape(len(rows), v))]
        return [hist[c, width + 1:width + 1 + lengths[c]].copy() for c in range(self.chains)]


def _logsumexp(a: np.ndarray) -> np.ndarray:
    """ln sum exp over the last axis, row by row (-inf for an all -inf row)."""
    top = np.max(a, axis=-1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(a - safe[..., None]), axis=-1))
