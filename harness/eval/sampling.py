"""Which samples a run evaluates: each subset's members, drawn to `--limit`, and the F1 negative pools.

With a limit, each subset gets `limit` of its members (order "sampled"), in proportion to its classes'
counts where its members hold more than one (largest-remainder rounding), so that its accuracy stays an
estimate of the whole subset's. The draw is one seeded random ranking of the whole dataset, each subset
taking the first-ranked members of each class: a subset's draw does not depend on which other subsets
were asked for. The run evaluates the union, in dataset order, but scores each subset over its own draw
(`Selection.members`), as the union may hold more of its members (`all,yes`: yes clips beyond all's quota).
Order "dataset" takes the first `limit` samples of the union, as harness did before it drew samples; there,
and without a limit, a subset's members are those the run evaluates.

A pool is added whole or not at all: F1 is only given over a whole pool (harness/eval/metrics.py). Pool
samples count towards a subset's false positives and true negatives only, never its n or accuracy.
"""

from dataclasses import dataclass, field

import numpy as np

from harness.defaults import AUTO_POOL_SAMPLES  # no --limit, no --pools/--no-pools: pools up to this many samples
from harness.samples import Sample

SAMPLED, DATASET = "sampled", "dataset"


@dataclass(frozen=True)
class Selection:
    samples: list[Sample]
    members: dict[str, frozenset[str]]  # subset -> ids of the samples it is scored on
    pool_added: dict[str, int] = field(default_factory=dict)  # subset -> samples its pool added to the run
    pool_left_out: dict[str, str] = field(default_factory=dict)  # subset -> why its pool was not added

    def member_mask(self, subset, samples) -> np.ndarray:
        """Which of `samples` the subset is scored on (n, accuracy, positives)."""
        ids = self.members[subset.name]
        return np.array([s.id in ids for s in samples], dtype=bool)


def class_quotas(counts: list[int], total: int) -> list[int]:
    """`total` shared out in proportion to `counts` by largest remainder (ties: the earlier class)."""
    counts_array = np.asarray(counts, dtype=np.int64)
    exact = total * counts_array / counts_array.sum()
    quotas = np.floor(exact).astype(np.int64)
    by_remainder = np.argsort(-(exact - quotas), kind="stable")
    quotas[by_remainder[: total - int(quotas.sum())]] += 1
    return quotas.tolist()


def drawn_members(subset, samples: list[Sample], limit: int, rank: np.ndarray) -> list[int]:
    """Indices into `samples` of `limit` members of the subset, stratified by class (all members if fewer):
    of each class, the members that come first in `rank`."""
    members = [i for i, s in enumerate(samples) if subset.contains(s)]
    if len(members) <= limit:
        return members
    by_class: dict[int, list[int]] = {}
    for i in sorted(members, key=lambda i: rank[i]):
        by_class.setdefault(subset.label(samples[i]), []).append(i)
    classes = sorted(by_class)
    quotas = class_quotas([len(by_class[c]) for c in classes], limit)
    return sorted(i for c, quota in zip(classes, quotas, strict=True) for i in by_class[c][:quota])


def select(
    samples,
    subsets: list,
    limit: int | None = None,
    order: str = DATASET,
    seed: int = 0,
    pools: bool | None = False,
) -> Selection:
    """The samples to evaluate. `pools`: True adds every subset's pool, False none, None (auto) each pool
    while the run has no limit and the pools add at most AUTO_POOL_SAMPLES."""
    samples = list(samples)
    drawn = None
    if limit is None or order == DATASET:
        chosen = [i for i, s in enumerate(samples) if any(sub.contains(s) for sub in subsets)]
        chosen = set(chosen[:limit])  # in dataset order: the first `limit` (None: all)
    else:
        rank = np.random.default_rng(seed).permutation(len(samples))
        drawn = {sub.name: drawn_members(sub, samples, limit, rank) for sub in subsets}
        chosen = {i for indices in drawn.values() for i in indices}
    added, left_out = {}, {}
    for sub in subsets:
        pool = {i for i, s in enumerate(samples) if sub.is_negative(s)} - chosen
        if not pool or (pools is None and not any(sub.contains(samples[i]) for i in chosen)):
            continue  # complete already, or no member to give an F1 for
        auto = pools is None and limit is None and sum(added.values()) + len(pool) <= AUTO_POOL_SAMPLES
        if not (pools is True or auto):
            left_out[sub.name] = _why_left_out(pools, limit, len(pool))
            continue
        chosen |= pool
        added[sub.name] = len(pool)
    if drawn is None:  # the members the run evaluates, pools included
        drawn = {sub.name: [i for i in chosen if sub.contains(samples[i])] for sub in subsets}
    members = {name: frozenset(samples[i].id for i in indices) for name, indices in drawn.items()}
    return Selection([samples[i] for i in sorted(chosen)], members, added, left_out)


def _why_left_out(pools: bool | None, limit: int | None, missing: int) -> str:
    rest = f"--pools adds the {missing:,} samples it lacks"
    if pools is False:
        return f"--no-pools left the pool out; {rest}"
    if limit is not None:
        return f"--limit {limit} left the pool out; {rest}"
    return f"the pools would add more than {AUTO_POOL_SAMPLES:,} samples; {rest}"


def select_samples(samples, subsets: list, limit: int | None = None, pools: bool = False) -> list[Sample]:
    """The subsets' members (the first `limit` in dataset order) and, with pools, every pool."""
    return select(samples, subsets, limit, DATASET, pools=pools).samples
