"""R@1 protocols on the real annotation files, against literal re-implementations."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from toys import toy_video

from baglm_nb.core.evaluation import best_rows, evaluate, pair_hits, recall_subsets, video_hits
from baglm_nb.inputs.datasets import dataset_spec, load_dataset


def noisy_beliefs(videos, seed=0, truth_weight=0.5):
    rng = np.random.default_rng(seed)
    out = {}
    for v in videos:
        t = v.num_rows()
        out[v.uid] = truth_weight * v.ground_truth(t) + rng.random((t, v.num_steps + 1))
    return out


@pytest.mark.parametrize(
    ("name", "pairs"),
    [("htstep", 2387), ("crosstask", 11922), ("ego4d_goalstep", 2276), ("coin", 6854)],
)
def test_pairs_and_perfect_beliefs(name, pairs):
    videos = load_dataset(name)
    truth = {v.uid: v.ground_truth().astype(float) for v in videos}
    assert len(pair_hits(name, truth, videos)) == pairs
    assert evaluate(name, truth, videos) == pytest.approx(100.0)


def test_flat_recall_equals_literal_loop():
    videos = load_dataset("htstep")
    beliefs = noisy_beliefs(videos)
    hits = total = 0
    for v in videos:
        y = v.ground_truth(beliefs[v.uid].shape[0])
        for k in range(v.num_steps):
            if y[:, k].any():
                total += 1
                hits += int(y[int(np.argmax(beliefs[v.uid][:, k])), k])
    assert evaluate("htstep", beliefs) == pytest.approx(100 * hits / total)


def test_crosstask_average_over_twenty_subsets():
    videos = load_dataset("crosstask")
    beliefs = noisy_beliefs(videos, seed=1)
    uids = [v.uid for v in videos]
    by_uid = {v.uid: v for v in videos}
    results = []
    for seed in range(20):
        random.seed(seed)
        chosen = random.sample(uids, min(1850, len(uids)))
        per_task: dict[str, list[int]] = {}
        for uid in chosen:
            steps, hits = video_hits(by_uid[uid], beliefs[uid])
            acc = per_task.setdefault(by_uid[uid].task, [0, 0])
            acc[0] += int(hits.sum())
            acc[1] += len(steps)
        results.append(np.mean([h / n for h, n in per_task.values()]))
    assert evaluate("crosstask", beliefs) == pytest.approx(100 * np.mean(results))
    # the average over tasks differs from the flat mean over pairs
    assert evaluate("crosstask", beliefs) != pytest.approx(
        100 * pair_hits("crosstask", beliefs)["hit"].mean(), abs=1e-3
    )


def test_ties_go_to_the_earliest_row():
    video = toy_video([(2.0, 3.0, 0), (6.0, 7.0, 1)])
    beliefs = np.zeros((10, 3))
    beliefs[[2, 8], 0] = 1.0  # tie: the earlier row (inside the interval) wins
    beliefs[[1, 6], 1] = 1.0  # tie: the earlier row (outside) wins
    steps_idx, hits = video_hits(video, beliefs)
    assert steps_idx.tolist() == [0, 1] and hits.tolist() == [True, False]


def test_subset_of_videos_and_bad_shapes():
    videos = load_dataset("coin")
    beliefs = noisy_beliefs(videos[:10])
    assert evaluate("coin", beliefs) == pytest.approx(
        100 * pair_hits("coin", beliefs)["hit"].mean()
    )
    bad = {videos[0].uid: np.zeros((5, videos[0].num_steps))}
    with pytest.raises(ValueError, match=videos[0].uid):
        evaluate("coin", bad)
    with pytest.raises(ValueError, match="not in coin"):
        evaluate("coin", {"no-such-video": np.zeros((5, 3))})


def _literal_draws(recall, order: list[str]) -> tuple[list[list[str]], float]:
    """The subsets drawn by a literal loop, and ``random``'s next number after them."""
    literal = []
    for seed in range(recall.subsets):
        random.seed(seed)
        literal.append(random.sample(order, min(recall.subset_size, len(order))))
    return literal, random.random()


def test_kept_truth_and_draws_are_what_fresh_ones_give():
    """The per-(video, T) ground truth and the per-(recall, order) CrossTask draws are kept: a
    second call gives the literal loop's subsets and leaves ``random`` where drawing them leaves
    it, another order or subset size gets its own draws (the key holds both), and the kept
    ground truth is the video's on each T and for a changed video, read-only."""
    recall = dataset_spec("crosstask").recall
    order = [f"u{i}" for i in range(recall.subset_size + 40)]
    shuffled = random.Random(7).sample(order, len(order))
    for rec, uids in [
        (recall, order),
        (recall, shuffled),  # same uids, another order: other subsets
        (dataclasses.replace(recall, subset_size=recall.subset_size - 5), order),
        (recall, order),  # the first again, after the others were kept
    ]:
        literal, after = _literal_draws(rec, uids)
        for _ in range(2):  # drawn (or kept before), then kept
            random.seed(12345)
            assert recall_subsets(rec, uids) == literal
            assert random.random() == after
    video = load_dataset("coin")[0]
    full = noisy_beliefs([video])[video.uid]
    shorter = dataclasses.replace(video, segments=video.segments[:1])
    for v, beliefs in [(video, full), (video, full[:-3]), (shorter, full), (video, full)]:
        for _ in range(2):
            steps, best, y = best_rows(v, beliefs)
            np.testing.assert_array_equal(y, v.ground_truth(beliefs.shape[0])[:, :-1])
            np.testing.assert_array_equal(steps, np.flatnonzero(y.any(axis=0)))
            np.testing.assert_array_equal(best, beliefs[:, steps].argmax(axis=0))
            assert not y.flags.writeable and not steps.flags.writeable
