"""The float32-published precision: saturation ties, the torch reference, real annotations."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from authors_files import MODEL, authors_dependency, authors_scores, write_authors_files
from reference import published_filter_torch, reference_recall
from toys import toy_video

from baglm_nb.core import published_numerics as pn
from baglm_nb.core import sources
from baglm_nb.core.evaluation import best_rows, pair_hits, video_hits
from baglm_nb.core.filtering import PRECISIONS, run_filter, static_transition
from baglm_nb.core.pipeline import compare, run_baglm
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.stores.importer import import_reference_results

PUBLISHED = "float32-published"
D55 = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=float)


def test_saturation_tie_goes_to_the_first_row_closed_form():
    # K = 1 and D = 0: the transition is uniform, so each belief is V[t, 0] / (V[t, 0] + V[t, 1]).
    # Rows 4-5: 0.9 against 1e-8, 1 - 1.1e-8 in float64 but exactly 1.0 in float32 (the
    # other state is below half an ulp of 1); rows 8-9: 0.9 against 1e-9, closer still to 1.
    vsg = np.array([[0.5, 0.5]] * 4 + [[0.9, 1e-8]] * 2 + [[0.5, 0.5]] * 2 + [[0.9, 1e-9]] * 2)
    progress, dep = np.zeros((10, 1, 10)), np.zeros((1, 1))
    video = toy_video([(4.0, 5.0, 0)], steps=("a",))  # ground truth: rows 4 and 5
    b32 = run_filter(vsg, progress, dep, precision=PUBLISHED)
    b64 = run_filter(vsg, progress, dep)
    assert b32.dtype == np.float32 and b64.dtype == np.float64
    assert b32[4, 0] == b32[8, 0] == 1.0
    np.testing.assert_allclose(b64[4, 0], 0.9 / (0.9 + 1e-8), rtol=1e-15)
    np.testing.assert_allclose(b64[8, 0], 0.9 / (0.9 + 1e-9), rtol=1e-15)
    assert b32[:, 0].argmax() == 4 and b64[:, 0].argmax() == 8
    assert video_hits(video, b32)[1].tolist() == [True]
    assert video_hits(video, b64)[1].tolist() == [False]


def test_saturation_tie_with_transitions_and_progress():
    # reference-protocol §5.5's D: step 2 needs steps 0 and 1. Steps 0 and 1 are seen first,
    # then step 2 answers confidently for 12 segments while the other options keep shrinking,
    # so float64 beliefs keep growing and float32 ones sit at exactly 1.0.
    seg = [[0.9, 1e-4, 1e-4, 1e-3]] * 3 + [[1e-4, 0.9, 1e-4, 1e-3]] * 3
    seg += [[1e-9 * 0.5**i, 1e-9 * 0.5**i, 0.95, 1e-9 * 0.5**i] for i in range(12)]
    vsg = np.repeat(np.array(seg), 2, axis=0)
    progress = np.zeros((len(vsg), 3, 10))
    progress[:6, 0, 9] = progress[6:12, 1, 9] = progress[12:, 2, 5] = 0.9
    b32 = run_filter(vsg, progress, D55, precision=PUBLISHED)
    b64 = run_filter(vsg, progress, D55)
    first_one = int(np.flatnonzero(b32[:, 2] == 1.0)[0])
    assert (b32[first_one:, 2] == 1.0).sum() >= 2  # a tie at exactly 1.0
    assert b32[:, 2].argmax() == first_one
    assert b64[:, 2].argmax() >= first_one + 4  # float64 picks a later segment
    ref = published_filter_torch(vsg, progress, D55)
    assert ref[:, 2].argmax() == first_one


def test_float64_remains_the_default_and_unchanged():
    rng = np.random.default_rng(11)
    vsg, progress = rng.random((30, 4)), rng.dirichlet(np.ones(11), size=(30, 3))[..., :10]
    default = run_filter(vsg, progress, D55)
    np.testing.assert_array_equal(default, run_filter(vsg, progress, D55, precision="float64"))
    assert default.dtype == np.float64 and PRECISIONS == ("float64", PUBLISHED)
    np.testing.assert_allclose(default[0], _first_row_float64(vsg[0], progress[0]), rtol=1e-12)
    with pytest.raises(ValueError, match="precision must be one of"):
        run_filter(vsg, progress, D55, precision="float16")


def _first_row_float64(v, p):
    """Row 0 by hand: the uniform belief through the weighted static matrix, then the update."""
    e = p @ (np.arange(10) / 9)
    r = np.ones(3)
    r[1:] = (D55[1:] @ e) / D55[1:].sum(axis=1)
    val = np.ones(3)
    val[:2] = (D55[:, :2] * (1 - e[:, None])).sum(axis=0) / D55[:, :2].sum(axis=0)
    tt = static_transition(D55) * np.append(r * val, 1.0)
    tt /= tt.sum(axis=1, keepdims=True)
    post = (np.full(4, 0.25) @ tt) * v
    return post / post.sum()


def _random_case(rng, k, t, confident):
    video = toy_video(
        [(2.0 * i, 2.0 * i + 7.0, i % k) for i in range(0, t // 2, 3)],
        steps=[f"s{i}" for i in range(k)],
        duration=t + 1.0,
    )
    vsg, prog = authors_scores(rng, video, confident=confident, rows=t)
    return video, vsg.numpy(), prog.numpy(), authors_dependency(rng, k).numpy()


@pytest.mark.parametrize("confident", [False, True])
@pytest.mark.parametrize("k", [1, 2, 5, 9, 17, 40])
def test_fast_published_mode_matches_the_torch_reference(k, confident):
    rng = np.random.default_rng(100 * k + confident)
    transitions = ("static", "readiness", "validity", "both")
    differs = 0
    for transition in transitions if k in (5, 17) else ("both",):
        for _ in range(3):
            video, vsg, prog, dep = _random_case(rng, k, 160, confident)
            fast = run_filter(vsg, prog, dep, transition=transition, precision=PUBLISHED)
            slow = published_filter_torch(vsg, prog, dep, transition)
            np.testing.assert_array_equal(fast.argmax(axis=0), slow.argmax(axis=0))
            np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-6)
            assert video_hits(video, fast)[1].tolist() == video_hits(video, slow)[1].tolist()
            b64 = run_filter(vsg, prog, dep, transition=transition)
            differs += int((b64.argmax(axis=0) != slow.argmax(axis=0)).sum())
    if confident and k >= 5:
        assert differs > 0  # the inputs do exercise the float32 ties


@pytest.mark.parametrize("k", [1, 3, 8, 15, 16, 33, 70, 119])
def test_static_matrix_and_sums_equal_torch_bit_for_bit(k):
    rng = np.random.default_rng(k)
    dep = authors_dependency(rng, k)
    m = dep.T.clone()
    m[:, dep.sum(dim=1) == 0] = 1.0
    m.fill_diagonal_(1.0)
    m = torch.cat([torch.cat([m, torch.ones(k, 1)], dim=1), torch.ones(1, k + 1)])
    m = m / m.sum(dim=1, keepdim=True)
    m = m / m.sum(dim=1, keepdim=True)
    np.testing.assert_array_equal(pn.static_transition32(dep.numpy()), m.numpy())
    x = torch.from_numpy(rng.random((k, k + 5)).astype(np.float32) ** 6)
    flat, lanes = x.numpy().ravel(), pn.TORCH_SUM_LANES
    rows = [pn._inner_sum(flat, i * (k + 5), k + 5, lanes) for i in range(k)]
    cols = [pn._column_sum(flat, k, k + 5, c, lanes) for c in range(k + 5)]
    np.testing.assert_array_equal(np.array(rows, np.float32), x.sum(dim=1).numpy())
    np.testing.assert_array_equal(np.array(cols, np.float32), x.sum(dim=0).numpy())


_SUMS_UNDER = """
import numpy as np, torch
from baglm_nb.core import published_numerics as pn
rng, bad = np.random.default_rng(7), 0
for k in (1, 2, 7, 16, 33, 119):
    for n in (1, 3, 8, 9, 17, 31, 64, 65, 130, 257):
        x = torch.from_numpy(rng.random((k, n)).astype(np.float32) ** 6)
        flat = x.numpy().ravel()
        rows = [pn._inner_sum(flat, i * n, n, pn.TORCH_SUM_LANES) for i in range(k)]
        cols = [pn._column_sum(flat, k, n, c, pn.TORCH_SUM_LANES) for c in range(n)]
        bad += int((np.array(rows, np.float32) != x.sum(dim=1).numpy()).sum())
        bad += int((np.array(cols, np.float32) != x.sum(dim=0).numpy()).sum())
print(torch.backends.cpu.get_cpu_capability(), bad)
"""


@pytest.mark.parametrize("capability", ["default", "avx2", "avx512"])
def test_emulated_sums_equal_torch_under_every_cpu_capability(capability):
    # torch's sum kernel has no AVX-512 build: 8 lanes at every capability (even on AVX-512).
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    out = subprocess.run(
        [sys.executable, "-c", _SUMS_UNDER],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert out[1] == "0", f"{out[1]} sums differ from torch's under {out[0]}"
    with pytest.raises(ValueError, match="lanes must be 8 or 16"):
        pn.forward32(np.ones((2, 2)), np.zeros((2, 1, 10)), np.zeros((1, 1)), lanes=4)


@pytest.mark.parametrize("prior", ["propagated", "next_step"])
def test_published_mode_runs_the_project_priors_and_segment_stepping(prior):
    rng = np.random.default_rng(5)
    vsg, prog = rng.random((20, 4)), rng.dirichlet(np.ones(11), size=(20, 3))[..., :10]
    nxt = rng.random((20, 4)) * 0.85 + 0.1 if prior == "next_step" else None
    kw = {"prior": prior, "next_step": nxt}
    b32 = run_filter(vsg, prog, D55, precision=PUBLISHED, **kw)
    np.testing.assert_allclose(b32, run_filter(vsg, prog, D55, **kw), rtol=1e-4, atol=1e-6)
    seg32 = run_filter(vsg, prog, D55, stepping="segment", precision=PUBLISHED)
    np.testing.assert_allclose(seg32, run_filter(vsg, prog, D55, stepping="segment"), rtol=1e-4)


# --------------------------------------------------------------------------------------------
# the authors' layout on real annotations: import, then the published R@1

SPECIAL = {
    # duplicate step texts ("Make Dim Sum"/A), K = 27
    "htstep": ("Dr4vxVQ-kNA", "4Ecd7S_cp-0"),
    # ground truth at or past the last row
    "crosstask": ("PZh3Jkel3Ds", "ZmRl0V79iXo"),
    # K = 119, ground truth past the end, K = 1
    "ego4d_goalstep": (
        "grp-3d7ccb44-b05d-4b67-baae-4e0f55d8307b",
        "grp-ebce88dd-4852-4506-9dcc-5f5798ce1cbf",
        "8253ab0b-51ab-4168-8c63-3bb179be485a",
    ),
    # duplicate step texts, ground truth past the end
    "coin": ("UTS7A8wHcdk", "4jH2KlDxtZk"),
}


def _chosen(dataset: str, extra: int = 5):
    videos = load_dataset(dataset)
    first = {v.uid for v in videos[:extra]}
    return [v for v in videos if v.uid in first or v.uid in SPECIAL[dataset]]


@pytest.mark.parametrize("dataset", sorted(SPECIAL))
def test_imported_authors_files_give_the_published_r1(tmp_path, dataset):
    # Ego4D: its special videos (K = 119 over 3820 rows, K = 27, K = 1) and its first ordinary
    # one: the torch reference steps row by row, and each further ordinary video adds thousands
    # of rows of the same path.
    videos = _chosen(dataset, extra=1 if dataset == "ego4d_goalstep" else 5)
    written = write_authors_files(tmp_path / "src", videos, seed=len(dataset))
    summary = import_reference_results(
        tmp_path / "src",
        dataset,
        MODEL,
        root=tmp_path / "cache",
        videos=videos,
        show_progress=False,
        log=[].append,
    )
    assert summary["videos_imported"] == len(videos) and summary["files_refused"] == 0
    obs = sources.observations(dataset, summary["scores_path"], videos=videos)
    assert obs.precision == PUBLISHED and obs.label == f"imported:{MODEL}, {PUBLISHED}"
    deps = sources.dependencies(dataset, summary["dependencies_path"])
    published = {
        v.uid: published_filter_torch(
            written["vsg"][v.uid], written["prog"][v.uid], written["prereq"][v.group]
        )
        for v in videos
    }
    fast = run_baglm(obs, deps)
    for v in videos:
        np.testing.assert_array_equal(fast[v.uid].argmax(axis=0), published[v.uid].argmax(axis=0))
    result = compare(obs, deps)
    # equal but for the order of float additions in the means (CrossTask: pandas vs Python)
    assert result["baglm"] == pytest.approx(reference_recall(dataset, published, videos), abs=1e-9)
    off = reference_recall(dataset, written["vsg"], videos)
    assert result["off_the_shelf"] == pytest.approx(off, abs=1e-9)
    assert result["source"] == obs.label and result["precision"] == PUBLISHED


def test_evaluate_reports_the_precision_and_the_pairs_that_differ(tmp_path, capsys):
    from baglm_nb.apps.cli.main import main

    videos = _chosen("ego4d_goalstep", extra=3)
    write_authors_files(tmp_path / "src", videos, seed=3)
    summary = import_reference_results(
        tmp_path / "src",
        "ego4d_goalstep",
        MODEL,
        root=tmp_path / "cache",
        videos=videos,
        show_progress=False,
        log=[].append,
    )
    args = [
        "evaluate",
        "--dataset",
        "ego4d_goalstep",
        "--scores",
        summary["scores_path"],
        "--deps",
        summary["dependencies_path"],
        "--json",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"(observations: imported:{MODEL}, {PUBLISHED})" in out.splitlines()[0]
    result = json.loads(out.splitlines()[-1])
    agreement = result["precision_agreement"]
    obs = sources.observations("ego4d_goalstep", summary["scores_path"])
    deps = sources.dependencies("ego4d_goalstep", summary["dependencies_path"])
    runs = {p: run_baglm(obs.with_precision(p), deps) for p in PRECISIONS}
    best = {p: [best_rows(v, runs[p][v.uid])[1] for v in obs.videos] for p in PRECISIONS}
    differ = sum(int((a != b).sum()) for a, b in zip(*best.values(), strict=True))
    assert agreement["pairs"] == len(pair_hits("ego4d_goalstep", runs[PUBLISHED], obs.videos))
    assert agreement["best_row_differs"] == differ > 0  # confident scores: float64 differs
    assert agreement["baglm"][PUBLISHED] == result["baglm"]
    assert main([*args[:-1], "--precision", "float64"]) == 0
    assert f"(observations: imported:{MODEL}, float64)" in capsys.readouterr().out


def test_labels_record_the_precision():
    from baglm_nb.analyses.tables import title_for
    from baglm_nb.core.observations import default_precision, labelled
    from baglm_nb.inputs.paper import paper_model

    assert default_precision(f"imported:{MODEL}") == PUBLISHED
    assert default_precision("lmm:internvl3-8b") == default_precision("simulated") == "float64"
    assert labelled(f"imported:{MODEL}", PUBLISHED) == f"imported:{MODEL}, {PUBLISHED}"
    assert labelled(f"imported:{MODEL}, {PUBLISHED}", "float64") == f"imported:{MODEL}, float64"
    assert labelled("lmm:x", "float64") == "lmm:x"
    sim = sources.observations("coin", "simulated", limit=2)
    assert (sim.label, sim.precision) == ("simulated", "float64")
    sim32 = sources.observations("coin", "simulated", limit=2, precision=PUBLISHED)
    assert sim32.label == f"simulated, {PUBLISHED}" and sim32.simulated
    assert sim32.with_precision(None).label == "simulated"
    assert "not a real model, float32-published" in title_for("R@1", sim32.label)
    assert paper_model(f"imported:internvl3-8b, {PUBLISHED}") == paper_model(
        "imported:internvl3-8b"
    )
    with pytest.raises(ValueError, match="precision must be one of"):
        sim.with_precision("float16")
    b32 = run_baglm(sim32, "oracle")
    assert all(b.dtype == np.float32 for b in b32.values())
