"""The n-gram case of issue 31: CKY charts over keypad SMS lattices scored by the embedded
state_union 5-gram; exact answers against adaptive importance sampling and randomized inside
DP at equal CPU time.

Why these references: in a chart whose binary rules do not depend on the words
(`arsdecode.trees.charts`), g(t) = S(shape) * E(words) * p_LM(words), so ln Z = ln Z_shape
(inside over the shape automaton) + ln Z_lattice (the string engine's exact forward DP,
`methods.full.full_log_partition`), the best tree is the best shape with the certified best
path (`arsdecode.decode`), exact tree samples are shape samples (inside, top-down) paired with
exact path samples (`arsdecode.sample`, whose ln Z interval is reported), and a function of the
shape (the brackets over a span) has its expectation under the shape automaton alone. None of
the baselines is told this; they work on the whole automaton and the LM.

Equal CPU time: each baseline gets `budget` process seconds per lattice (AIS stops after the
round that crosses it; randomized DP repeats independent runs and averages Z_hat, which stays
unbiased, and takes the ratio of the Z-weighted f sums). Errors are against the exact values.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from importlib.resources import files

import numpy as np

import arsdecode
from arsdecode.methods.full import full_log_partition
from arsdecode.model import ModelLike
from arsdecode.tasks.sms.keypad import KeypadChannel, is_typable, sample_sentence
from arsdecode.trees.automaton import Derivation, TreeAutomaton
from arsdecode.trees.charts import bracket_mask, lattice_chart, shape_weights
from arsdecode.trees.importance import adaptive_importance_sampling, rule_count
from arsdecode.trees.randomized import randomized_inside
from arsdecode.trees.rule_table import table_of
from maxarpa.model import Model


@dataclass(frozen=True)
class SmsConfig:
    lengths: tuple[int, ...] = tuple(range(5, 16))
    candidates: int = 4  # keypad candidates kept per position (top_k)
    gamma: float = 0.5
    budget: float = 5.0  # CPU seconds per baseline per lattice
    ais_samples: int = 200
    rdp_top: int = 8
    rdp_sampled: int = 8
    exact_samples: int = 200
    seed: int = 31


QUICK = SmsConfig(lengths=(5, 8), budget=1.0)


@dataclass(frozen=True)
class SmsRow:
    length: int
    observation: str
    best_tree: str
    best_log_p: float
    certified: bool
    exact_log_z: float
    sampled_log_z_ci: tuple[float, float]  # from exact samples (ARS's importance estimate)
    exact_f: float
    span: tuple[int, int]
    exact_seconds: float  # ln Z + E[f] + best tree, CPU
    sample_seconds: float  # exact samples, CPU
    ais_log_z: float
    ais_f: float
    ais_trees: int
    ais_seconds: float
    rdp_log_z: float
    rdp_f: float
    rdp_runs: int
    rdp_seconds: float


def embedded_lm() -> Model:
    return arsdecode.load_lm(str(files("arsdecode") / "data" / "state_union.5gram.maxarpa.gz"))


def pick_sentences(sentences: list[list[str]], lengths: tuple[int, ...]) -> dict[int, list[str]]:
    """The first typable sentence of each length (corpus order: deterministic)."""
    out: dict[int, list[str]] = {}
    for s in sentences:
        if len(s) in lengths and len(s) not in out and all(map(is_typable, s)):
            out[len(s)] = s
    return out


def bracketed(chart: TreeAutomaton, d: Derivation, words: list[str]) -> str:
    """`*(w0,*(w1,w2))` with the best path's words at the leaves."""
    rule = chart.rules[d.rule]
    if rule.is_leaf:
        span = chart.states[rule.lhs].strip("<>").split(",")
        return words[int(span[0])]
    return "*(" + ",".join(bracketed(chart, c, words) for c in d.children) + ")"


def run_one(lm: ModelLike, channel: KeypadChannel, words: list[str],
            cfg: SmsConfig) -> SmsRow:
    rng = np.random.default_rng((cfg.seed, len(words)))
    observation = sample_sentence(words, rng)
    lattice = channel.build_lattice(observation, cfg.candidates)
    chart = lattice_chart(lattice, cfg.gamma, rng)
    table = table_of(chart)
    length = len(words)
    span = (0, (length + 1) // 2)
    mask = bracket_mask(table, *span)
    t0 = time.process_time()
    shape = chart.with_weights(shape_weights(chart))
    exact_log_z = shape.log_partition() + full_log_partition(lm, lattice)
    exact_f = float(table.from_automaton_order(shape.expected_counts())[mask].sum())
    _, best_shape = shape.viterbi()
    binary_only = np.array([0.0 if r.is_leaf else r.weight for r in chart.rules])
    shape_best = chart.derivation_weight(best_shape, binary_only)
    best = arsdecode.decode(lm, lattice)
    exact_seconds = time.process_time() - t0
    t0 = time.process_time()
    draws = arsdecode.sample(lm, lattice, cfg.exact_samples, seed=cfg.seed)
    shape.sampler().draw(rng)  # the shape half of an exact tree sample (one inside pass)
    sample_seconds = time.process_time() - t0
    ci = (draws.log_Z_ci[0] + shape.log_partition(), draws.log_Z_ci[1] + shape.log_partition())
    ais = adaptive_importance_sampling(table, np.random.default_rng((cfg.seed, 1)),
                                       rounds=10**6, samples=cfg.ais_samples, lm=lm,
                                       f=rule_count(mask), cpu_seconds=cfg.budget)
    rdp_z: list[float] = []
    rdp_f: list[float] = []
    t0 = time.process_time()
    rdp_rng = np.random.default_rng((cfg.seed, 2))
    while not rdp_z or time.process_time() - t0 < cfg.budget:
        r = randomized_inside(table, lm, rdp_rng, top=cfg.rdp_top, sampled=cfg.rdp_sampled,
                              f_mask=mask)
        rdp_z.append(r.log_Z)
        rdp_f.append(r.mean_f)
    rdp_seconds = time.process_time() - t0
    z = np.array(rdp_z)
    top = float(z.max())
    wts = np.exp(z - top)
    return SmsRow(
        length, observation, bracketed(chart, best_shape, list(best.tokens)),
        shape_best + best.log_p, bool(best.certified), exact_log_z, ci, exact_f, span,
        exact_seconds, sample_seconds, ais.log_Z, ais.mean_f, ais.trees, ais.seconds,
        top + math.log(float(wts.mean())), float(np.dot(wts, rdp_f) / wts.sum()), len(z),
        rdp_seconds)


def run(cfg: SmsConfig, sentences: list[list[str]], say=print) -> list[SmsRow]:
    lm = embedded_lm()
    channel = KeypadChannel.from_vocab(lm.vocab)
    rows = []
    for length, words in sorted(pick_sentences(sentences, cfg.lengths).items()):
        row = run_one(lm, channel, words, cfg)
        say(f"sms chart length {length}: ln Z {row.exact_log_z:.3f}, AIS {row.ais_log_z:.3f}, "
            f"RDP {row.rdp_log_z:.3f}")
        rows.append(row)
    return rows


def markdown(rows: list[SmsRow], cfg: SmsConfig) -> list[str]:
    lines = [
        f"Charts over keypad lattices ({cfg.candidates} candidates per position, binary rules "
        f"Dirichlet({cfg.gamma})), the embedded state_union 5-gram; f = the number of brackets "
        "(binary constituents) inside the span [0, ceil(l/2)]. Baselines: "
        f"{cfg.budget:g} CPU s each per lattice (AIS: {cfg.ais_samples} trees per round; "
        f"randomized DP: top {cfg.rdp_top} + {cfg.rdp_sampled} sampled items per state, runs "
        "averaged). Errors are |estimate - exact|.", "",
        "| l | exact ln Z | ln Z 95% CI (exact samples) | exact E[f] | exact CPU s | "
        "AIS ln Z err | AIS E[f] err | AIS trees | RDP ln Z err | RDP E[f] err | RDP runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.length} | {r.exact_log_z:.4f} | [{r.sampled_log_z_ci[0]:.4f}, "
            f"{r.sampled_log_z_ci[1]:.4f}] | {r.exact_f:.4f} | {r.exact_seconds:.3f} | "
            f"{abs(r.ais_log_z - r.exact_log_z):.4f} | {abs(r.ais_f - r.exact_f):.4f} | "
            f"{r.ais_trees} | {abs(r.rdp_log_z - r.exact_log_z):.4f} | "
            f"{abs(r.rdp_f - r.exact_f):.4f} | {r.rdp_runs} |")
    lines += ["", "Exact best trees (certified: the best shape's Viterbi and the string "
              "engine's certificate on the path):", ""]
    for r in rows:
        lines.append(f"- l = {r.length}, `{r.observation}`: `{r.best_tree}`, ln g = "
                     f"{r.best_log_p:.4f}, certified {r.certified}")
    return lines
