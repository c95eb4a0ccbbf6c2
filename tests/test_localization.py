"""LoG blob detection, HT-Step article-grounding mAP and Ego4D windowed recall."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from baglm_nb.analyses import localization
from baglm_nb.analyses.localization import (
    DEFAULT_SCALES,
    SIGMA_TO_HALF_WIDTH,
    article_grounding_ap,
    article_grounding_map,
    column_step_ids,
    detect_segments,
    find_blobs,
    interpolated_ap,
    localize,
    log_response,
    log_scales,
    windowed_recall,
)
from baglm_nb.analyses.localization.detection import _local_max_3x3
from baglm_nb.analyses.localization.metrics import _dedupe
from baglm_nb.inputs.datasets import Segment, Video, load_dataset
from baglm_nb.inputs.paper import PAPER_LOCALIZATION, paper_model

# --------------------------------------------------------------------------------------------
# LoG response


def test_default_scales_are_13_geometric_from_1_to_480():
    assert len(DEFAULT_SCALES) == 13
    assert DEFAULT_SCALES[0] == pytest.approx(1.0) and DEFAULT_SCALES[-1] == pytest.approx(480.0)
    ratios = DEFAULT_SCALES[1:] / DEFAULT_SCALES[:-1]
    np.testing.assert_allclose(ratios, 480 ** (1 / 12))
    np.testing.assert_allclose(log_scales(log_scale=False), np.linspace(1, 480, 13))


def test_gaussian_laplace_with_sigma_zero_on_steps_is_not_the_1d_log():
    """Why the module passes ``axes=(0,)``: sigma (s, 0) adds the smoothed signal."""
    x = np.random.default_rng(0).random((200, 4))
    per_column = np.stack([ndimage.gaussian_laplace(x[:, k], 5.0) for k in range(4)], axis=1)
    both = ndimage.gaussian_laplace(x, (5.0, 0.0))
    assert np.abs(both - per_column).max() > 0.1
    np.testing.assert_allclose(both, per_column + ndimage.gaussian_filter1d(x, 5.0, axis=0))
    expected = -(5.0**2) * per_column
    got = log_response(x, [5.0], method="direct", mode="reflect")[0]
    np.testing.assert_allclose(got, expected, atol=1e-12)


@pytest.mark.parametrize("mode", ["constant", "reflect"])
@pytest.mark.parametrize("rows", [1, 2, 3, 17, 250, 901])
def test_fast_path_equals_gaussian_laplace(rows, mode):
    x = np.random.default_rng(rows).random((rows, 5))
    direct = log_response(x, method="direct", mode=mode)
    fast = log_response(x, method="fast", mode=mode)
    assert fast.shape == (13, rows, 5)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-12)
    s = DEFAULT_SCALES[4]
    column = -(s**2) * ndimage.gaussian_laplace(x[:, 2], s, mode=mode)
    np.testing.assert_allclose(fast[4, :, 2], column, rtol=0, atol=1e-12)


def test_local_max_equals_maximum_filter():
    r = np.random.default_rng(1).integers(0, 4, size=(3, 7, 30)).astype(float)  # many ties
    expected = ndimage.maximum_filter(r, size=(1, 3, 3), mode="nearest")
    np.testing.assert_array_equal(_local_max_3x3(r), expected)


def _smooth_signal(rng, rows):
    x = ndimage.gaussian_filter1d(rng.random(rows), 3)
    x = x + 0.5 * (rng.random(rows) < 0.03)
    return ndimage.gaussian_filter1d(x, 2)


@pytest.mark.parametrize("log_scale", [True, False])
@pytest.mark.parametrize("method", ["fast", "direct"])
def test_blobs_match_skimage_blob_log(method, log_scale):
    from skimage import feature

    rng = np.random.default_rng(7)
    for _ in range(4):
        rows = int(rng.integers(60, 700))
        x = _smooth_signal(rng, rows)
        ref = feature.blob_log(
            x,
            min_sigma=1,
            max_sigma=480,
            num_sigma=13,
            log_scale=log_scale,
            threshold=0.01,
            overlap=1.0,
        )
        scales = log_scales(log_scale=log_scale)
        ours = find_blobs(
            x, scales=scales, threshold=0.01, refine=False, method=method, mode="reflect"
        )
        got = sorted(zip(ours["row"].tolist(), np.round(ours["sigma"], 9).tolist(), strict=True))
        want = sorted(zip(ref[:, 0].tolist(), np.round(ref[:, 1], 9).tolist(), strict=True))
        assert len(want) > 5
        assert got == want


def test_sigma_to_half_width_numerical_check():
    """A box of half-width w gives its largest normalised response at sigma = w."""
    assert SIGMA_TO_HALF_WIDTH == 1.0
    fine = np.geomspace(1.0, 80.0, 600)
    for n in (6, 16, 40, 100):
        x = np.zeros(800)
        x[400 - n // 2 : 400 - n // 2 + n] = 1.0
        centre = [400 - n // 2 + (n - 1) // 2, 400 - n // 2 + n // 2]
        resp = [-(s**2) * ndimage.gaussian_laplace(x, s)[centre].mean() for s in fine]
        best = fine[int(np.argmax(resp))]
        assert best / (n / 2) == pytest.approx(1.0, abs=0.03)
        assert max(resp) == pytest.approx(2 / np.sqrt(2 * np.pi) * np.exp(-0.5), abs=0.02)


# --------------------------------------------------------------------------------------------
# Segments


@pytest.mark.parametrize("width", [3, 4, 7, 10, 15, 22, 33, 50, 75, 120, 200, 333])
def test_box_boundaries_recovered_within_one_row(width):
    rng = np.random.default_rng(width)
    rows = 4000  # far from both ends (the reflected twin of a box bends the large scales)
    start = int(rng.integers(1500, 2000))
    height = float(rng.uniform(0.3, 1.0))
    x = np.zeros((rows, 2))
    x[start : start + width, 1] = height
    seg = detect_segments(x)
    assert (seg["step"] == 1).all()
    assert len(seg) == 1, seg
    top = seg.iloc[0]
    assert abs(top.t_start - start) <= 1 and abs(top.t_end - (start + width)) <= 1
    assert top.score == pytest.approx(height, rel=0.15)


@pytest.mark.parametrize("fps_rows", [1.0, 0.5, 2.0])
def test_box_boundaries_in_seconds(fps_rows):
    x = np.zeros(400)
    x[100:140] = 0.9
    seg = detect_segments(x, fps_rows=fps_rows)
    assert len(seg) == 1
    assert seg.t_start[0] == pytest.approx(100 / fps_rows, abs=1 / fps_rows)
    assert seg.t_end[0] == pytest.approx(140 / fps_rows, abs=1 / fps_rows)


def test_reflect_mode_bends_boxes_near_an_end():
    """Why zeros outside the video is the default: a mirrored twin distorts nearby boxes."""
    x = np.zeros(600)
    x[400:520] = 0.7
    clean = detect_segments(x)
    assert len(clean) == 1
    assert abs(clean.t_start[0] - 400) <= 1 and abs(clean.t_end[0] - 520) <= 1
    mirrored = detect_segments(x, mode="reflect")
    assert len(mirrored) > 1
    best = mirrored.iloc[(mirrored.t_end - mirrored.t_start).sub(120).abs().argmin()]
    assert abs(best.t_start - 400) > 1  # sigma comes out ~8% low


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_box_at_the_video_start_and_end(mode):
    x = np.zeros(300)
    x[:25] = 1.0
    x[270:] = 1.0
    seg = detect_segments(x, mode=mode).sort_values("score", ascending=False)
    first, last = seg.iloc[:2].sort_values("t_start").itertuples()
    assert first.t_start == 0 and first.t_end == pytest.approx(25, abs=1)
    assert last.t_start == pytest.approx(270, abs=1) and last.t_end == pytest.approx(300, abs=1)
    # at a coarse scale the two boxes are one weak blob (scored by its mean, 0.18)
    assert (seg.score.iloc[2:] < 0.25).all()


def test_several_boxes_and_columns():
    x = np.zeros((600, 3))
    boxes = {0: [(50, 62), (300, 380)], 2: [(120, 126), (400, 520)]}
    for k, spans in boxes.items():
        for a, b in spans:
            x[a:b, k] = 0.7
    seg = detect_segments(x)
    for k, spans in boxes.items():
        got = seg[seg.step == k]
        for a, b in spans:
            near = (np.abs(got.t_start - a) <= 1) & (np.abs(got.t_end - b) <= 1)
            assert near.sum() == 1, (k, a, b, got)
    assert not (seg.step == 1).any()


def test_even_width_box_from_duplicated_rows_is_one_centred_blob():
    x = np.repeat(np.r_[np.zeros(50), np.full(5, 0.8), np.zeros(50)], 2)  # 2-s segments
    seg = detect_segments(x)
    assert len(seg) == 1
    assert seg.row[0] == 104.5  # the tie between rows 104 and 105 is one blob at its midpoint
    assert seg.t_start[0] == pytest.approx(100, abs=0.05)
    assert seg.t_end[0] == pytest.approx(110, abs=0.05)


def test_confidence_is_the_mean_inside_and_options():
    rng = np.random.default_rng(3)
    x = 0.3 * rng.random((400, 4))
    x[100:160, 2] += 0.6
    seg = detect_segments(x)
    for row in seg.itertuples():
        lo, hi = int(np.ceil(row.t_start - 0.5)), int(np.floor(row.t_end - 0.5))
        assert row.score == pytest.approx(x[lo : hi + 1, row.step].mean())
    everything = detect_segments(x, overlap=None)
    assert len(everything) > len(seg)
    top = detect_segments(x, top_n=2, overlap=None)
    assert top.groupby("step").size().max() <= 2
    assert set(top.step) == set(everything.step)
    assert len(detect_segments(x, threshold=10.0)) == 0
    assert detect_segments(np.zeros((50, 3))).empty
    assert detect_segments(np.full((50, 3), 0.4), mode="reflect").empty
    whole = detect_segments(np.full((50, 3), 0.4))  # zeros outside: the video is one box
    assert len(whole) == 3 and np.allclose(
        whole[["t_start", "t_end", "score"]], [0, 50, 0.4], atol=0.01
    )
    assert list(detect_segments(np.zeros((0, 3))).columns)[:4] == [
        "step",
        "t_start",
        "t_end",
        "score",
    ]


def test_refinement_off_reports_grid_scales():
    x = np.zeros(500)
    x[200:230] = 1.0
    b = find_blobs(x, refine=False)
    assert set(np.round(b["sigma"], 9)) <= set(np.round(DEFAULT_SCALES, 9))
    r = find_blobs(x)
    assert np.abs(r["sigma"] - 15).min() < 0.5


# --------------------------------------------------------------------------------------------
# Article-grounding mAP: a literal transcription of the official loop


def slow_official_ap(videos, preds, thresholds, match_labels=False):
    """HT-Step's official evaluation, written out: per activity, label-agnostic by default."""
    step_ids = {}
    for v in videos:
        ids = column_step_ids(v)
        step_ids[v.uid] = {i for i in ids if i is not None}
    by_uid = {v.uid: v for v in videos}
    acts = []
    for v in videos:
        if v.task not in acts:
            acts.append(v.task)
    rows = [
        (i, p.video_uid, str(p.step_id), p.t_start, p.t_end, p.score)
        for i, p in enumerate(preds.itertuples())
        if p.video_uid in by_uid and str(p.step_id) in step_ids[p.video_uid]
    ]
    out = {}
    for act in acts:
        gt = [(v.uid, s) for v in videos if v.task == act for s in _dedupe(v.segments)]
        mine = [r for r in rows if by_uid[r[1]].task == act]
        mine.sort(key=lambda r: (-r[5], -r[0]))
        aps = []
        for thr in thresholds:
            locked = [False] * len(gt)
            tp = []
            for _, uid, label, s, e, _score in mine:
                cands = []
                for j, (guid, seg) in enumerate(gt):
                    if guid != uid:
                        continue
                    inter = max(0.0, min(e, seg.end) - max(s, seg.start))
                    iou = inter / ((seg.end - seg.start) + (e - s) - inter)
                    cands.append((iou, j, seg))
                cands.sort(key=lambda c: (c[0], c[1]), reverse=True)
                hit = False
                for iou, j, seg in cands:
                    if iou < thr:
                        break
                    if locked[j] or (match_labels and seg.step_id != label):
                        continue
                    locked[j] = hit = True
                    break
                tp.append(hit)
            if not mine:
                aps.append(0.0)
                continue
            tp_c = np.cumsum(tp)
            prec = tp_c / np.arange(1, len(tp) + 1)
            rec = tp_c / len(gt)
            mprec = [0.0, *prec, 0.0]
            mrec = [0.0, *rec, 1.0]
            for i in range(len(mprec) - 2, -1, -1):
                mprec[i] = max(mprec[i], mprec[i + 1])
            aps.append(
                sum(
                    (mrec[i] - mrec[i - 1]) * mprec[i]
                    for i in range(1, len(mrec))
                    if mrec[i] != mrec[i - 1]
                )
                * 100
            )
        out[act] = aps
    return out


def random_predictions(videos, seed, per_video=25):
    rng = np.random.default_rng(seed)
    rows = []
    for v in videos:
        ids = [i for i in column_step_ids(v) if i is not None] + ["999999"]  # one foreign id
        dur = v.num_rows()
        for seg in v.segments:  # near-miss copies of the truth, so that matches happen
            for _ in range(2):
                jitter = rng.normal(0, 0.25 * (seg.end - seg.start) + 1, size=2)
                s, e = sorted([seg.start + jitter[0], seg.end + jitter[1]])
                rows.append((v.uid, rng.choice(ids), s, e, float(rng.integers(0, 6)) / 5))
        for _ in range(per_video):
            s = rng.uniform(0, dur)
            rows.append((v.uid, rng.choice(ids), s, s + rng.exponential(15), rng.random()))
    return pd.DataFrame(rows, columns=["video_uid", "step_id", "t_start", "t_end", "score"])


@pytest.mark.parametrize("match_labels", [False, True])
def test_fast_matcher_equals_literal_official_loop(match_labels):
    videos = load_dataset("htstep")[:60]
    preds = random_predictions(videos, seed=int(match_labels))
    thresholds = (0.3, 0.4, 0.5, 0.6, 0.7)
    fast = article_grounding_ap(preds, videos=videos, match_labels=match_labels)
    slow = slow_official_ap(videos, preds, thresholds, match_labels)
    assert list(fast["activity"]) == list(slow)
    np.testing.assert_allclose(
        fast[[f"@{t:g}" for t in thresholds]].to_numpy(), np.array(list(slow.values())), atol=1e-9
    )
    assert fast.iloc[:, 1:6].to_numpy().max() > 10  # the test exercises real matches


def test_perfect_predictions_give_100_on_htstep():
    videos = load_dataset("htstep")
    rows = [(v.uid, s.step_id, s.start, s.end, 1.0) for v in videos for s in v.segments]
    preds = pd.DataFrame(rows, columns=["video_uid", "step_id", "t_start", "t_end", "score"])
    for match_labels in (False, True):
        result = article_grounding_map(preds, match_labels=match_labels)
        assert set(result) == {"@0.3", "@0.4", "@0.5", "@0.6", "@0.7", "mean"}
        assert all(v == pytest.approx(100.0) for v in result.values())
    preds["step_id"] = preds["step_id"].astype(int)  # ints are accepted
    assert article_grounding_map(preds)["mean"] == pytest.approx(100.0)


def _video(uid, task, segments, steps=("a", "b", "c"), ids=("1", "2", "3")):
    index = {s: i for i, s in enumerate(steps)}
    return Video(
        dataset="htstep",
        uid=uid,
        task=task,
        group=f"{task}_none",
        goal=task,
        llm_goal=task,
        steps=tuple(steps),
        segments=tuple(Segment(a, b, s, index[s], ids[index[s]]) for a, b, s in segments),
        fps=30.0,
        num_frames=30 * 200,
        duration=200.0,
    )


def _preds(*rows):
    return pd.DataFrame(rows, columns=["video_uid", "step_id", "t_start", "t_end", "score"])


@pytest.fixture()
def toy():
    return [
        _video("v1", "act", [(10.0, 20.0, "a"), (50.0, 60.0, "b")]),
        _video("v2", "act", [(0.0, 30.0, "c")]),
    ]


def test_hand_made_aps(toy):
    one = [_video("v1", "act", [(10.0, 20.0, "a")])]
    ap = article_grounding_map(_preds(("v1", "1", 10, 20, 0.9)), videos=one)
    assert ap["@0.5"] == pytest.approx(100)
    # a false positive ranked first, then the hit: precision 1/2 at recall 1 -> AP 50
    ap = article_grounding_map(
        _preds(("v1", "1", 100, 120, 0.9), ("v1", "1", 10, 20, 0.5)), videos=one
    )
    assert ap["@0.5"] == pytest.approx(50)
    ap = article_grounding_map(
        _preds(("v1", "1", 10, 20, 0.9), ("v1", "1", 100, 120, 0.5)), videos=one
    )
    assert ap["@0.5"] == pytest.approx(100)
    # two ground truths: hit, miss, hit -> 0.5 * 1 + 0.5 * 2/3
    preds = _preds(("v1", "1", 10, 20, 0.9), ("v1", "1", 100, 120, 0.8), ("v1", "2", 50, 60, 0.7))
    assert article_grounding_map(preds, videos=toy[:1])["@0.5"] == pytest.approx(100 * 5 / 6)
    # a second hit on a matched ground truth is a false positive
    preds = _preds(("v1", "1", 10, 20, 0.9), ("v1", "1", 10, 20, 0.8))
    assert article_grounding_map(preds, videos=one)["@0.5"] == pytest.approx(100)
    assert article_grounding_map(preds, videos=toy[:1])["@0.5"] == pytest.approx(50)


def test_tiou_threshold_is_inclusive_and_across_videos(toy):
    one = [_video("v1", "act", [(10.0, 20.0, "a")])]
    preds = _preds(("v1", "1", 15, 25, 0.9))  # IoU = 5 / 15 = 1/3
    ap = article_grounding_map(preds, videos=one)
    assert ap["@0.3"] == pytest.approx(100) and ap["@0.4"] == 0
    preds = _preds(("v1", "1", 10, 30, 0.9))  # IoU = 0.5 exactly
    assert article_grounding_map(preds, videos=one)["@0.5"] == pytest.approx(100)
    # a window that is perfect for v1's ground truth does not match in v2
    preds = _preds(("v2", "1", 50, 60, 0.9))
    assert article_grounding_map(preds, videos=toy)["@0.3"] == 0


def test_label_agnostic_by_default_and_strict_option(toy):
    preds = _preds(("v1", "2", 10, 20, 0.9), ("v1", "1", 50, 60, 0.8), ("v2", "3", 0, 30, 0.7))
    assert article_grounding_map(preds, videos=toy)["mean"] == pytest.approx(100)
    strict = article_grounding_map(preds, videos=toy, match_labels=True)
    # only v2's prediction has the right label: 1 of 3 ground truths, ranked last -> 1/3 * 1/3
    assert strict["@0.5"] == pytest.approx(100 / 9)


def test_foreign_steps_dropped_ground_truth_deduplicated(toy):
    # a step id outside the video's step list is ignored, not a false positive
    preds = _preds(("v1", "77", 10, 20, 0.99), ("v1", None, 10, 20, 0.98), ("v1", "1", 10, 20, 0.9))
    one = [_video("v1", "act", [(10.0, 20.0, "a")])]
    assert article_grounding_map(preds, videos=one)["@0.5"] == pytest.approx(100)
    dup = [_video("v1", "act", [(10.0, 20.0, "a"), (10.0004, 20.0, "a"), (30.0, 30.0005, "b")])]
    assert len(_dedupe(dup[0].segments)) == 1
    table = article_grounding_ap(_preds(("v1", "1", 10, 20, 0.9)), videos=dup)
    assert table["ground_truth"].tolist() == [1]
    assert table["@0.5"].tolist() == [pytest.approx(100)]


def test_activity_average_and_unknown_videos(toy):
    videos = [*toy, _video("w1", "other", [(0.0, 10.0, "a")], ids=("11", "12", "13"))]
    preds = _preds(
        ("v1", "1", 10, 20, 0.9),
        ("v1", "2", 50, 60, 0.9),
        ("v2", "3", 0, 30, 0.9),
        ("w1", "11", 100, 110, 0.9),
        ("w1", "11", 0, 10, 0.5),
    )
    table = article_grounding_ap(preds, videos=videos)
    per_activity = table.set_index("activity")["@0.5"]
    assert per_activity["act"] == pytest.approx(100) and per_activity["other"] == pytest.approx(50)
    assert article_grounding_map(preds, videos=videos)["@0.5"] == pytest.approx(75)
    # the videos argument restricts the evaluation; missing predictions are misses
    in_toy = preds[preds.video_uid != "w1"]
    assert article_grounding_map(in_toy, videos=toy)["@0.5"] == pytest.approx(100)
    assert article_grounding_map(preds.iloc[:1], videos=toy)["@0.5"] == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match="not in htstep"):
        article_grounding_map(_preds(("nope", "1", 0, 1, 1.0)), videos=toy)
    with pytest.raises(ValueError, match="t_end >= t_start"):
        article_grounding_map(_preds(("v1", "1", 5, 1, 1.0)), videos=toy)
    with pytest.raises(ValueError, match="lack columns"):
        article_grounding_map(preds.drop(columns="step_id"), videos=toy)


def test_interpolated_ap_envelope():
    assert interpolated_ap(np.array([1.0]), np.array([1.0])) == pytest.approx(1.0)
    assert interpolated_ap(np.array([0.0, 0.5]), np.array([0.0, 1.0])) == pytest.approx(0.5)
    # the dip at rank 2 is lifted by the later 2/3
    ap = interpolated_ap(np.array([1.0, 0.5, 2 / 3]), np.array([0.5, 0.5, 1.0]))
    assert ap == pytest.approx(0.5 + 0.5 * 2 / 3)


# --------------------------------------------------------------------------------------------
# Step ids, predictions from beliefs, paper values


def test_column_step_ids_on_htstep():
    videos = load_dataset("htstep")
    ids = {v.uid: column_step_ids(v) for v in videos}
    # 4432 step texts carry an id, less the 5 first copies of "Serve hot." (Make Dim Sum/A)
    assert sum(i is not None for v in ids.values() for i in v) == 4427
    for v in videos:
        for seg in v.segments:
            assert ids[v.uid][seg.step_index] == seg.step_id
    dim_sum = next(v for v in videos if v.uid == "ZSagPozU83Q")
    cols = [i for i, s in enumerate(dim_sum.steps) if s == "Serve hot."]
    assert [ids[dim_sum.uid][i] for i in cols] == [None, "3832"]


def test_localize_ground_truth_grid_scores_high():
    videos = load_dataset("htstep")[:40]
    grid = {v.uid: v.ground_truth().astype(float) for v in videos}
    preds = localize(grid, "htstep", videos)
    assert list(preds.columns) == [
        "video_uid",
        "step_index",
        "step_id",
        "t_start",
        "t_end",
        "score",
        "sigma",
    ]
    assert preds["step_id"].notna().all()  # blobs only where the annotated steps are
    result = article_grounding_map(preds, videos=videos)
    assert result["@0.3"] > 75 and result["@0.7"] > 30
    with pytest.raises(ValueError, match="columns"):
        localize({videos[0].uid: grid[videos[0].uid][:, :-1]}, "htstep", videos)
    with pytest.raises(ValueError, match="not in htstep"):
        localize({"nope": np.zeros((10, 3))}, "htstep", videos)


def test_paper_values():
    ref = PAPER_LOCALIZATION
    assert ref["internvl2.5-8b"]["baglm"] == {
        "@0.3": 15.9,
        "@0.5": 6.7,
        "@0.7": 1.5,
        "@[0.3-0.7]": 7.7,
    }
    assert ref["nasva"]["offline"]["@[0.3-0.7]"] == 6.7
    for model, rows in ref.items():
        if model != "nasva":  # BaGLM improves every LMM at every threshold
            assert all(rows["baglm"][k] >= rows["off_the_shelf"][k] for k in rows["baglm"])
    assert paper_model("simulated") == "internvl2.5-8b"
    assert paper_model("imported:internvl2.5-8b") == "internvl2.5-8b"
    assert paper_model("lmm:llava-onevision-qwen2-7b-ov") == "llava-onevision-7b"


# --------------------------------------------------------------------------------------------
# Ego4D windowed recall


def test_windowed_recall_nlq_convention():
    steps = ("a", "b")
    v = Video(
        dataset="ego4d_goalstep",
        uid="e1",
        task="g",
        group="e1",
        goal="g",
        llm_goal="g",
        steps=steps,
        fps=30.0,
        num_frames=30 * 300,
        duration=300.0,
        segments=(
            Segment(0.0, 20.0, "a", 0),
            Segment(100.0, 120.0, "a", 0),
            Segment(50.0, 60.0, "b", 1),
        ),
    )
    preds = pd.DataFrame(
        [
            ("e1", 0, 0.0, 10.0, 0.9),  # top-1 of step a: IoU 0.5 with its first segment
            ("e1", 0, 100.0, 120.0, 0.5),  # perfect, but not top-1
            ("e1", 1, 50.0, 56.0, 0.8),
        ],  # IoU 0.6
        columns=["video_uid", "step_index", "t_start", "t_end", "score"],
    )
    rec = windowed_recall(preds, videos=[v])
    assert rec["queries"] == 3
    assert rec["R@1@0.3"] == pytest.approx(200 / 3)  # a's first segment and b
    assert rec["R@1@0.5"] == pytest.approx(100 / 3)  # IoU exactly 0.5 is not above 0.5
    assert rec["mIoU"] == pytest.approx(100 * (0.5 + 0 + 0.6) / 3)
    pair = windowed_recall(preds, videos=[v], unit="pair")
    assert pair["pairs"] == 2 and pair["R@1@0.3"] == pytest.approx(100)
    assert windowed_recall(preds.iloc[2:], videos=[v])["R@1@0.3"] == pytest.approx(100 / 3)


# --------------------------------------------------------------------------------------------
# CLI


def test_cli_localize_on_simulated_htstep(capsys, tmp_path):
    from baglm_nb.apps.cli.main import main

    out = tmp_path / "loc"
    assert (
        main(
            [
                "localize",
                "--dataset",
                "htstep",
                "--scores",
                "simulated",
                "--limit",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "simulated observations, not a real model" in text
    assert "+ BaGLM" in text and "NaSVA" in text
    table = pd.read_csv(out.with_suffix(".csv"))
    ours = table[table["source"] == "simulated"].reset_index(drop=True)  # the slots: other LMMs
    assert ours.loc[0, "paper @0.3"] == 15.0 and ours.loc[1, "paper @[0.3-0.7]"] == 7.7
    assert len(table) == 9 and table["note"].fillna("").str.startswith("slot:").sum() == 6


# --------------------------------------------------------------------------------------------
# Package


@pytest.mark.parametrize("module", ["response", "detection", "metrics", "tables"])
def test_package_reexports_every_public_name(module):
    mod = importlib.import_module(f"baglm_nb.analyses.localization.{module}")
    assert mod.__doc__ and "Exports" in mod.__doc__
    for name in mod.__all__:
        assert getattr(localization, name) is getattr(mod, name)
        assert name in localization.__all__
    from baglm_nb import localization as shim

    assert shim.localize is localization.localize


def test_localization_tables_name_baglms_dependency_source():
    """Both tables carry ``D``: the simulated LLaMA by default, the given source otherwise."""
    from baglm_nb.analyses.localization import localization_table, windowed_recall_table
    from baglm_nb.core import sources
    from baglm_nb.core.pipeline import run_baglm

    htstep = sources.observations("htstep", limit=3)
    table = localization_table(htstep).frame
    computed = table[table["source"] == "simulated"]
    assert list(computed["D"]) == ["not used", "simulated-llm:llama"]
    assert table[table["source"] != "simulated"]["D"].isna().all()  # slots and NaSVA
    beliefs = run_baglm(htstep, "oracle")
    given = localization_table(htstep, "oracle", beliefs=beliefs).frame
    assert list(given[given["source"] == "simulated"]["D"]) == ["not used", "oracle"]
    ego4d = sources.observations("ego4d_goalstep", limit=2)
    recall = windowed_recall_table(ego4d, "simulated-llm:gpt")
    assert list(recall.frame["D"]) == ["not used", "simulated-llm:gpt"]
    assert recall.items is None and recall.sources.dependencies == ("simulated-llm:gpt",)


def test_localization_table_has_the_papers_rows_and_slots_for_the_lmms_not_run():
    """Tab. off_the_shelf_vs_baglm_localization in the paper's order, values as in its LaTeX."""
    from baglm_nb.analyses.layouts import PAPER_ONLY, SLOT_CELL, localization_layout
    from baglm_nb.analyses.localization import localization_table, model_label
    from baglm_nb.core import sources

    table = localization_table(sources.observations("htstep", limit=3)).frame
    assert list(zip(table["model"], table["method"], strict=True)) == [
        ("llava-onevision-7b", "off-the-shelf LMM"),
        ("llava-onevision-7b", "+ BaGLM"),
        ("qwen2.5-vl-7b", "off-the-shelf LMM"),
        ("qwen2.5-vl-7b", "+ BaGLM"),
        ("internvl3-8b", "off-the-shelf LMM"),
        ("internvl3-8b", "+ BaGLM"),
        ("simulated (compared with internvl2.5-8b)", "off-the-shelf LMM"),
        ("simulated (compared with internvl2.5-8b)", "+ BaGLM"),
        ("nasva", "NaSVA (offline)"),
    ]
    assert table["paper @0.3"].tolist() == [14.1, 14.7, 15.5, 15.8, 15.6, 17.5, 15.0, 15.9, 13.7]
    assert table["paper @[0.3-0.7]"].tolist() == [6.6, 6.9, 7.3, 7.7, 7.2, 8.1, 7.0, 7.7, 6.7]
    slots = table[table["note"].str.startswith("slot:")]
    assert len(slots) == 6 and slots["@0.3"].isna().all() and (slots["source"] == "none").all()
    assert "LLaVA-OV-7B" in slots["note"].iloc[0]
    assert "internvl2.5-8b" not in set(table["model"])  # simulated is not InternVL2.5-8B
    assert model_label("simulated") == "simulated (compared with internvl2.5-8b)"
    assert model_label("lmm:OpenGVLab/InternVL3-8B") == "internvl3-8b"
    layout = localization_layout(table)
    assert list(layout.columns) == [
        "LMM",
        "method",
        "@0.3",
        "@0.5",
        "@0.7",
        "@[0.3-0.7]",
        "paper @0.3",
        "paper @0.5",
        "paper @0.7",
        "paper @[0.3-0.7]",
    ]
    assert layout["@0.3"].tolist()[:6] == [SLOT_CELL] * 6
    assert layout["@0.3"].iloc[-1] == PAPER_ONLY
    assert layout["@0.3"].iloc[6] == f"{table['@0.3'].iloc[6]:.1f}"
