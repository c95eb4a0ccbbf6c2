"""Observations + D -> beliefs -> numbers, through the Python API and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runs import run_main
from reference import in_truth, reference_pairs, reference_recall

from baglm_nb.core import sources
from baglm_nb.core.observations import from_cache, from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.pipeline import compare, run_baglm
from baglm_nb.core.simulate import write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey


@pytest.fixture(scope="module")
def htstep_obs():
    return from_simulation("htstep", limit=30)


def test_zero_dependencies_reduce_to_the_off_the_shelf_model(htstep_obs):
    # simulated VSG rows sum to 1, so with D = 0 the filter returns the scores themselves (up to
    # rounding: duplicated rows may then differ in the last bit, which can move an argmax tie)
    beliefs = run_baglm(htstep_obs, "none")
    for uid, b in beliefs.items():
        np.testing.assert_allclose(b, htstep_obs.vsg[uid], rtol=0, atol=1e-12)
    result = compare(htstep_obs, "none")
    # R@1 moves only through such ties: count them with explicit loops (tests/reference.py)
    moved, pairs = 0, 0
    for video in htstep_obs.videos:
        raw, b = htstep_obs.vsg[video.uid], beliefs[video.uid]
        for step, _ in reference_pairs(video, raw):
            pairs += 1
            r_raw, r_b = int(np.argmax(raw[:, step])), int(np.argmax(b[:, step]))
            if r_raw != r_b:
                assert raw[r_raw, step] == pytest.approx(raw[r_b, step], abs=1e-12)  # a tie
                moved += in_truth(video, r_b, step) - in_truth(video, r_raw, step)
    assert result["off_the_shelf"] == pytest.approx(
        reference_recall("htstep", htstep_obs.vsg, htstep_obs.videos), abs=1e-9
    )
    assert result["baglm"] == pytest.approx(result["off_the_shelf"] + 100 * moved / pairs, abs=1e-9)
    assert result["videos"] == 30 and result["source"] == "simulated"


def test_oracle_dependencies_help_on_simulated_scores(htstep_obs):
    result = compare(htstep_obs, "oracle")
    assert result["baglm"] > result["off_the_shelf"] + 3


def test_dependency_sources_agree(htstep_obs):
    videos = load_dataset("htstep")[:30]
    by_uid = {v.uid: oracle_dependency(v) for v in videos}
    a = run_baglm(htstep_obs, "oracle", videos=videos)
    b = run_baglm(htstep_obs, by_uid, videos=videos)
    for uid in a:
        np.testing.assert_array_equal(a[uid], b[uid])
    video = videos[0]
    with pytest.raises(ValueError, match="K=10"):
        sources.dependencies("htstep", {video.uid: np.zeros((3, 3))}).matrix(video)
    with pytest.raises(KeyError, match=video.uid):
        sources.dependencies("htstep", {"other": np.zeros((3, 3))}).matrix(video)
    assert sources.dependencies("htstep", {}) is None  # an empty per-dataset mapping


def test_cli_evaluate_from_caches_matches_the_api(tmp_path):
    videos = load_dataset("htstep")[:12]
    scores = write_simulated_cache("htstep", tmp_path, videos=videos)
    deps = DependencyCache(tmp_path, DependencyKey("htstep", "oracle", "chain"))
    for v in videos:
        deps.write(v.uid, v.steps, oracle_dependency(v))
    argv = ["evaluate", "--dataset", "htstep", "--scores", str(scores), "--deps", str(deps.path)]
    done = run_main(*argv, "--json")  # the verb in this process: its output is compared
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "simulated observations, not a real model" in out
    assert "videos evaluated: 12" in out
    result = json.loads(out.strip().splitlines()[-1])
    expected = compare(from_cache(scores), "oracle")
    assert result["baglm"] == pytest.approx(expected["baglm"])
    assert result["off_the_shelf"] == pytest.approx(expected["off_the_shelf"])


def test_cli_rejects_a_cache_of_another_dataset(tmp_path):
    scores = write_simulated_cache("coin", tmp_path, limit=2)
    proc = run_main("evaluate", "--dataset", "htstep", "--scores", str(scores))
    assert proc.returncode != 0 and "holds 'coin', not 'htstep'" in proc.stderr
