"""The n-gram case of issue 31: CKY charts over keypad SMS lattices scored by the embedded
state_union 5-gram; exact answers against adaptive importance sampling and randomized inside
DP at equal CPU time.

Exact answers come from the tree engine (`arsdecode.trees.api`): the full intersection with
the 5-gram's merged states (ln Z, the rule posteriors that give E_G[f]), ARS/OS* for the
certified best tree and for exact samples with ln Z's 95% interval, and the states each builds.
They are checked against an independent reference that holds for these charts only: the binary
rules do not depend on the words (`arsdecode.trees.charts`), so ln Z = ln Z_shape (inside over
the shape automaton) + ln Z_lattice (the string engine's forward DP,
`methods.full.full_log_partition`), and a function of the shape (the brackets over a span) has
its expectation under the shape automaton alone. The baselines are told none of this.

Equal CPU time: each baseline gets, per lattice, the CPU time of ARS drawing the exact samples
(with ln Z's interval), and ten times that. AIS stops after the round that crosses it;
randomized DP repeats independent runs, averages Z_hat (still unbiased) and takes the ratio of
the Z-weighted f sums. Errors are |estimate - exact|.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from importlib.resources import files

import numpy as np

import arsdecode
from arsdecode.methods.full import full_log_partition
from arsdecode.tasks.sms.keypad import KeypadChannel, is_typable, sample_sentence
from arsdecode.trees import api as tree_api
from arsdecode.trees.charts import bracket_mask, lattice_chart, shape_weights
from arsdecode.trees.importance import adaptive_importance_sampling, rule_count
from arsdecode.trees.randomized import randomized_inside
from arsdecode.trees.rule_table import RuleTable, table_of
from maxarpa.model import Model


@dataclass(frozen=True)
class SmsConfig:
    lengths: tuple[int, ...] = tuple(range(5, 16))
    candidates: int = 4  # keypad candidates kept per position (top_k)
    gamma: float = 0.5
    budget_factors: tuple[float, ...] = (1.0, 10.0)  # x ARS's exact-sample CPU time
    ais_samples: int = 200
    rdp_top: int = 8
    rdp_sampled: int = 8
    exact_samples: int = 200
    seed: int = 31


QUICK = SmsConfig(lengths=(5, 8), exact_samples=50)


@dataclass(frozen=True)
class Estimate:
    budget: float  # CPU seconds allowed
    ais_log_z: float
    ais_f: float
    ais_trees: int
    rdp_log_z: float
    rdp_f: float
    rdp_runs: int


@dataclass(frozen=True)
class SmsRow:
    length: int
    observation: str
    best_tree: str
    best_log_p: float
    certified: bool
    exact_log_z: float  # the full intersection's
    factorised_gap: float  # max |full - factorised| over ln Z and E[f] (the check)
    sampled_log_z_ci: tuple[float, float]  # ARS's importance estimate's 95% interval
    exact_f: float
    full_nodes: int  # forest nodes of the full intersection
    ars_nodes: int  # forest nodes of ARS's final q (decode)
    full_seconds: float  # CPU: the full intersection, ln Z and posteriors
    decode_seconds: float  # CPU: ARS decode with its certificate
    sample_seconds: float  # CPU: ARS, the exact samples and ln Z interval
    estimates: tuple[Estimate, ...]


def embedded_lm() -> Model:
    return arsdecode.load_lm(str(files("arsdecode") / "data" / "state_union.5gram.maxarpa.gz"))


def pick_sentences(sentences: list[list[str]], lengths: tuple[int, ...]) -> dict[int, list[str]]:
    """The first typable sentence of each length (corpus order: deterministic)."""
    out: dict[int, list[str]] = {}
    for s in sentences:
        if len(s) in lengths and len(s) not in out and all(map(is_typable, s)):
            out[len(s)] = s
    return out


def run_one(lm: Model, channel: KeypadChannel, words: list[str], cfg: SmsConfig) -> SmsRow:
    rng = np.random.default_rng((cfg.seed, len(words)))
    observation = sample_sentence(words, rng)
    lattice = channel.build_lattice(observation, cfg.candidates)
    chart = lattice_chart(lattice, cfg.gamma, rng)
    table = table_of(chart)
    mask = bracket_mask(table, 0, (len(words) + 1) // 2)
    t0 = time.process_time()
    forest = tree_api.full_forest(lm, chart)
    exact_log_z = forest.log_partition()
    post = forest.rule_posteriors(len(chart.rules))
    exact_f = float(table.from_automaton_order(post)[mask].sum())
    full_seconds = time.process_time() - t0
    shape = chart.with_weights(shape_weights(chart))
    gap = max(abs(shape.log_partition() + full_log_partition(lm, lattice) - exact_log_z),
              abs(float(table.from_automaton_order(shape.expected_counts())[mask].sum())
                  - exact_f))
    t0 = time.process_time()
    best = tree_api.decode(lm, chart, method="ars")
    decode_seconds = time.process_time() - t0
    t0 = time.process_time()
    draws = tree_api.sample(lm, chart, cfg.exact_samples, seed=cfg.seed, method="ars")
    sample_seconds = time.process_time() - t0
    estimates = tuple(_baselines(table, lm, mask, sample_seconds * factor, cfg)
                      for factor in cfg.budget_factors)
    return SmsRow(len(words), observation, best.tree, best.log_p, best.certified, exact_log_z,
                  gap, draws.log_Z_ci, exact_f, forest.num_nodes, best.states, full_seconds,
                  decode_seconds, sample_seconds, estimates)


def _baselines(table: RuleTable, lm: Model, mask: np.ndarray, budget: float,
               cfg: SmsConfig) -> Estimate:
    ais = adaptive_importance_sampling(table, np.random.default_rng((cfg.seed, 1)),
                                       rounds=10**6, samples=cfg.ais_samples, lm=lm,
                                       f=rule_count(mask), cpu_seconds=budget)
    rdp_z: list[float] = []
    rdp_f: list[float] = []
    t0 = time.process_time()
    rdp_rng = np.random.default_rng((cfg.seed, 2))
    while not rdp_z or time.process_time() - t0 < budget:
        r = randomized_inside(table, lm, rdp_rng, top=cfg.rdp_top, sampled=cfg.rdp_sampled,
                              f_mask=mask)
        rdp_z.append(r.log_Z)
        rdp_f.append(r.mean_f)
    z = np.array(rdp_z)
    top = float(z.max())
    wts = np.exp(z - top)
    return Estimate(budget, ais.log_Z, ais.mean_f, ais.trees, top + math.log(float(wts.mean())),
                    float(np.dot(wts, rdp_f) / wts.sum()), len(z))


def run(cfg: SmsConfig, sentences: list[list[str]], say=print) -> list[SmsRow]:
    lm = embedded_lm()
    channel = KeypadChannel.from_vocab(lm.vocab)
    rows = []
    for length, words in sorted(pick_sentences(sentences, cfg.lengths).items()):
        row = run_one(lm, channel, words, cfg)
        say(f"sms chart length {length}: ln Z {row.exact_log_z:.3f}, " + ", ".join(
            f"{e.budget:.2f}s: AIS {e.ais_log_z:.3f} RDP {e.rdp_log_z:.3f}"
            for e in row.estimates))
        rows.append(row)
    return rows


def markdown(rows: list[SmsRow], cfg: SmsConfig) -> list[str]:
    lines = [
        f"Charts over keypad lattices ({cfg.candidates} candidates per position, binary rules "
        f"Dirichlet({cfg.gamma})), the embedded state_union 5-gram; f = the number of brackets "
        "(binary constituents) inside the span [0, ceil(l/2)]. Exact: the full intersection "
        "(merged 5-gram states) and ARS; `check` is the largest gap between the full "
        "intersection and the independent factorised reference (ln Z and E[f]).", "",
        "| l | exact ln Z | ARS ln Z 95% CI "
        f"({cfg.exact_samples} exact samples) | exact E[f] | check | full nodes | ARS nodes | "
        "full CPU s | ARS decode CPU s | ARS sample CPU s | certified |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.length} | {r.exact_log_z:.4f} | [{r.sampled_log_z_ci[0]:.4f}, "
            f"{r.sampled_log_z_ci[1]:.4f}] | {r.exact_f:.4f} | {r.factorised_gap:.1e} | "
            f"{r.full_nodes} | {r.ars_nodes} | {r.full_seconds:.3f} | {r.decode_seconds:.3f} | "
            f"{r.sample_seconds:.3f} | {r.certified} |")
    for k, factor in enumerate(cfg.budget_factors):
        lines += ["", f"Baselines at {factor:g}x the CPU time of ARS's exact samples "
                  f"(AIS: {cfg.ais_samples} trees per round; randomized DP: top {cfg.rdp_top} "
                  f"+ {cfg.rdp_sampled} sampled items per state, runs averaged):", "",
                  "| l | CPU s each | AIS ln Z err | AIS E[f] err | AIS trees | "
                  "RDP ln Z err | RDP E[f] err | RDP runs |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            e = r.estimates[k]
            lines.append(
                f"| {r.length} | {e.budget:.3f} | {abs(e.ais_log_z - r.exact_log_z):.2e} | "
                f"{abs(e.ais_f - r.exact_f):.2e} | {e.ais_trees} | "
                f"{abs(e.rdp_log_z - r.exact_log_z):.2e} | {abs(e.rdp_f - r.exact_f):.2e} | "
                f"{e.rdp_runs} |")
    lines += ["", "Exact best trees (ARS, certified):", ""]
    for r in rows:
        lines.append(f"- l = {r.length}, `{r.observation}`: `{r.best_tree}`, ln p = "
                     f"{r.best_log_p:.4f}, certified {r.certified}")
    return lines
