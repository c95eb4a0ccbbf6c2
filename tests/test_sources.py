"""The one resolver of scores / deps settings: labels, limits in annotation order, errors."""

import json

import numpy as np
import pytest
from cli_runs import run_main

from baglm_nb.analyses.results import main_results_table
from baglm_nb.core import sources
from baglm_nb.core.observations import from_cache, from_simulation
from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.core.pipeline import compare, run_baglm
from baglm_nb.core.simulate import write_simulated_cache
from baglm_nb.core.simulate_deps import order_evidence, simulated_matrix
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey


@pytest.fixture(scope="module")
def shuffled_cache(tmp_path_factory):
    """A CrossTask cache of 8 videos whose sorted uid order differs from annotation order."""
    videos = load_dataset("crosstask")[:8]
    assert sorted(v.uid for v in videos) != [v.uid for v in videos]
    root = tmp_path_factory.mktemp("scores")
    return videos, write_simulated_cache("crosstask", root, videos=videos[::-1])


def test_limit_means_the_first_videos_in_annotation_order(shuffled_cache):
    videos, folder = shuffled_cache
    expected = [v.uid for v in videos[:3]]
    assert [v.uid for v in sources.select_videos("crosstask", 3)] == expected
    assert sources.observations("crosstask", str(folder), limit=3).uids() == expected
    assert sources.observations("crosstask", "simulated", limit=3).uids() == expected
    assert sources.observations("crosstask", {"crosstask": folder}, limit=3).uids() == expected
    with pytest.raises(ValueError, match="positive"):
        sources.select_videos("crosstask", 0)
    with pytest.raises(ValueError, match="positive"):
        sources.observations("crosstask", str(folder), limit=0)


def test_cli_notebook_and_table_evaluate_the_same_videos(shuffled_cache):
    """``--limit 3`` in the CLI, ``limit=3`` in a notebook's sources and in a table agree.

    All three default to the same D, the simulated LLaMA, and say so.
    """
    videos, folder = shuffled_cache
    argv = ["evaluate", "--dataset", "crosstask", "--scores", str(folder), "--limit", "3", "--json"]
    done = run_main(*argv)  # the verb in this process: its output is what is compared
    assert done.returncode == 0, done.stderr
    out = done.stdout
    cli = json.loads(out.strip().splitlines()[-1])
    assert "D (BaGLM's dependency matrices): simulated-llm:llama" in out
    # what notebook 03 does: sources.observations_for(datasets, scores, limit=limit)
    [obs] = sources.observations_for(["crosstask"], {"crosstask": folder}, limit=3)
    table = main_results_table([obs]).frame
    first3 = from_cache(folder).subset([v.uid for v in videos[:3]])
    direct = compare(first3, sources.SIMULATED_LLM)
    assert cli["videos"] == table["videos"].iloc[0] == 3
    assert cli["D"] == table["D"].iloc[0] == "simulated-llm:llama"
    assert cli["baglm"] == pytest.approx(direct["baglm"])
    assert table["workbench"].iloc[0] == round(direct["baglm"], 1)
    assert direct["baglm"] != compare(first3, "oracle")["baglm"]  # the default is not the oracle


def test_observation_settings_and_labels(shuffled_cache, tmp_path):
    _, folder = shuffled_cache
    obs = sources.observations("crosstask", folder)
    assert obs.label == "simulated" and obs.uids() == [v.uid for v in obs.videos]
    assert sources.observations("crosstask", obs) is obs
    with pytest.raises(ValueError, match="not 'coin'"):
        sources.observations("coin", folder)
    with pytest.raises(TypeError, match="scores for coin"):
        sources.observations("coin", 3)
    assert sources.observations("coin", {"crosstask": folder}, limit=2).label == "simulated"


def test_dependency_settings(tmp_path):
    video = load_dataset("htstep")[0]
    k = video.num_steps
    oracle = sources.dependencies("htstep", "oracle")
    assert oracle.label == "oracle"
    np.testing.assert_array_equal(oracle.matrix(video), oracle_dependency(video))
    none = sources.dependencies("htstep", "none")
    np.testing.assert_array_equal(none.matrix(video), np.zeros((k, k)))
    cache = DependencyCache(tmp_path, DependencyKey("htstep", "llm-x", "p"))
    cache.write(video.group, list(video.steps), np.full((k, k), 0.25))
    for setting in (cache, str(cache.path), {"htstep": str(cache.path)}):
        resolved = sources.dependencies("htstep", setting)
        assert resolved.label == "llm-x"
        np.testing.assert_array_equal(resolved.matrix(video), np.full((k, k), 0.25))
    assert sources.dependencies("htstep", {"coin": "oracle"}) is None
    assert sources.dependencies("htstep", oracle) is oracle
    with pytest.raises(ValueError, match="'orcle'"):
        sources.dependencies("htstep", "orcle")
    assert (oracle.kind, none.kind, resolved.kind) == ("oracle", "none", "llm")
    assert not (oracle.simulated or resolved.simulated)
    # the per-dataset mapping reaches the filter: the same beliefs as the opened cache
    obs = sources.observations("htstep", limit=2)
    a = run_baglm(obs, {"htstep": str(cache.path)}, videos=[video])
    b = run_baglm(obs, cache, videos=[video])
    np.testing.assert_array_equal(a[video.uid], b[video.uid])


def test_simulated_dependency_settings():
    """``simulated-llm[:preset][:held-out]`` and ``noisy-oracle:<level>``: labels, kinds, D."""
    videos = load_dataset("htstep")
    video = videos[0]
    group = [v for v in videos if v.group == video.group]
    for setting, preset, label in (
        ("simulated-llm", "llama", "simulated-llm:llama"),
        ("simulated-llm:llama", "llama", "simulated-llm:llama"),
        ("simulated-llm:gpt", "gpt", "simulated-llm:gpt"),
    ):
        d = sources.dependencies("htstep", setting)
        assert (d.label, d.kind, d.simulated) == (label, "llm", True)
        np.testing.assert_array_equal(d.matrix(video), simulated_matrix(group, preset))
        assert sources.label_of(d) == label
    held = sources.dependencies("htstep", "simulated-llm:gpt:held-out")
    assert held.label == "simulated-llm:gpt:held-out" and held.simulated
    n, b = order_evidence(group)
    own_n, own_b = order_evidence([video])
    expected = simulated_matrix(group, "gpt", evidence=(n - own_n, b - own_b))
    np.testing.assert_array_equal(held.matrix(video), expected)
    noisy = sources.dependencies("htstep", "noisy-oracle:0")
    assert (noisy.label, noisy.kind, noisy.simulated) == ("noisy-oracle:0", "noisy-oracle", True)
    np.testing.assert_array_equal(noisy.matrix(video), oracle_dependency(video))
    assert sources.dependencies("htstep", "noisy-oracle:0.25").label == "noisy-oracle:0.25"
    with pytest.raises(ValueError, match="unknown simulated-LLM preset 'mistral'"):
        sources.dependencies("htstep", "simulated-llm:mistral")
    with pytest.raises(ValueError, match="held-out"):
        sources.dependencies("htstep", "simulated-llm:llama:loo")
    with pytest.raises(ValueError, match="noisy-oracle:<level"):
        sources.dependencies("htstep", "noisy-oracle:lots")
    with pytest.raises(ValueError, match=r"level must be in \[0, 1\]"):
        sources.dependencies("htstep", "noisy-oracle:2")


def test_a_folder_above_one_score_cache_names_it(shuffled_cache, tmp_path):
    videos, folder = shuffled_cache
    above = folder.parent.parent  # .../scores/crosstask/simulated
    assert sources.score_cache_folder(above) == folder
    assert sources.observations("crosstask", str(above), limit=2).uids() == [
        v.uid for v in videos[:2]
    ]
    with pytest.raises(FileNotFoundError, match="no such folder"):
        sources.score_cache_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match="no score cache in it or below it.*simulate"):
        sources.score_cache_folder(tmp_path)
    write_simulated_cache("coin", tmp_path / "two", videos=load_dataset("coin")[:1])
    write_simulated_cache("crosstask", tmp_path / "two", videos=videos[:1])
    with pytest.raises(ValueError, match="holds 2 score caches"):
        sources.score_cache_folder(tmp_path / "two")


def test_named_settings_come_from_the_registry(monkeypatch, tmp_path):
    """A named setting's prefix picks its resolver; unknown ones list the registry's forms."""
    named = ["oracle", "none", "simulated-llm", "noisy-oracle", "imported"]
    assert list(sources.DEPENDENCY_RESOLVERS) == named
    assert list(sources.OBSERVATION_RESOLVERS) == ["simulated"]
    forms = [form for form, _ in sources.DEPENDENCY_RESOLVERS.values()]
    assert forms[2:4] == ["simulated-llm[:<preset>][:held-out]", "noisy-oracle:<level>"]
    for unknown in ("orcle", "smollm2"):  # smollm2's matrices are built first, then named
        with pytest.raises(ValueError) as err:
            sources.dependencies("htstep", unknown)
        assert all(repr(form) in str(err.value) for form in forms)
        assert "python -m baglm_nb deps" in str(err.value)
    for argued in ("oracle:x", "none:0", "imported:llama"):
        with pytest.raises(ValueError, match="takes no argument"):
            sources.dependencies("htstep", argued)
    with pytest.raises(FileNotFoundError, match=r"python -m baglm_nb import --dataset coin SRC"):
        sources.dependencies("coin", "imported", root=tmp_path)
    # one row in the table is a new named setting, and the messages list it
    video = load_dataset("htstep")[0]
    k = video.num_steps

    def halves(dataset, setting, options):
        return sources.Dependencies(setting, {video.group: np.full((k, k), 0.5)}, "matrices")

    table = {**sources.DEPENDENCY_RESOLVERS, "halves": ("halves", halves)}
    monkeypatch.setattr(sources, "DEPENDENCY_RESOLVERS", table)
    resolved = sources.dependencies("htstep", "halves")
    assert resolved.label == "halves"
    np.testing.assert_array_equal(resolved.matrix(video), np.full((k, k), 0.5))
    with pytest.raises(ValueError, match="'imported', 'halves' and no existing"):
        sources.dependencies("htstep", "orcle")
    # scores: the same rule
    forms = r"'simulated\[:iid\|:pinned\]'"
    with pytest.raises(FileNotFoundError, match=f"scores 'simulatd': no such folder.*{forms}"):
        sources.observations("coin", "simulatd")
    with pytest.raises(ValueError, match="expected 'simulated' or one of 'simulated:iid'"):
        sources.observations("coin", "simulated:x")


def test_observations_keep_source_and_precision_apart(shuffled_cache):
    """``source`` and ``precision`` are two fields; ``label`` joins them for output only."""
    _, folder = shuffled_cache
    obs = sources.observations("crosstask", folder, limit=2)
    assert (obs.source, obs.precision, obs.label) == ("simulated", "float64", "simulated")
    published = obs.with_precision("float32-published")
    assert (published.source, published.precision) == ("simulated", "float32-published")
    assert published.label == "simulated, float32-published"
    assert published.subset(obs.uids()[:1]).source == "simulated"
    assert published.with_precision(None).label == "simulated"  # back to the source's default
    again = type(obs)("crosstask", published.label, 2, obs.vsg, obs.progress, videos=obs.videos)
    assert (again.source, again.precision) == ("simulated", "float64")  # a label's suffix drops
    imported = type(obs)("crosstask", "imported:m", 2, obs.vsg, obs.progress, videos=obs.videos)
    assert (imported.source, imported.precision) == ("imported:m", "float32-published")
    assert imported.label == "imported:m, float32-published"


def test_score_cache_contents_and_open(shuffled_cache):
    videos, folder = shuffled_cache
    dataset, uids = sources.score_cache_contents(folder.parent.parent)  # a folder above it
    assert dataset == "crosstask" and sorted(uids) == sorted(v.uid for v in videos)
    assert sources.open_score_cache(folder).key.dataset == "crosstask"
    with pytest.raises(FileNotFoundError, match="no such folder"):
        sources.score_cache_contents(folder / "missing")


def test_simulated_twins_resolve_by_name():
    """'simulated:iid' and 'simulated:pinned' are the twins; 'simulated' is the default one."""
    from baglm_nb.core.simulate import DEFAULT_TWIN, TWINS, cache_key, default_params, twin_params

    assert set(TWINS) == {"iid", "pinned"}
    resolved = {}
    for twin in TWINS:
        obs = sources.observations("ego4d_goalstep", f"simulated:{twin}", limit=2)
        ref = from_simulation("ego4d_goalstep", twin_params("ego4d_goalstep", twin), limit=2)
        assert obs.label == "simulated" and obs.uids() == ref.uids()
        for uid in obs.uids():
            np.testing.assert_array_equal(obs.vsg[uid], ref.vsg[uid])
            np.testing.assert_array_equal(obs.progress[uid], ref.progress[uid])
        resolved[twin] = obs
    default = sources.observations("ego4d_goalstep", "simulated", limit=2)
    uid = default.uids()[0]
    np.testing.assert_array_equal(default.vsg[uid], resolved[DEFAULT_TWIN].vsg[uid])
    other = next(t for t in TWINS if t != DEFAULT_TWIN)
    assert not np.array_equal(default.vsg[uid], resolved[other].vsg[uid])
    assert default_params("ego4d_goalstep") == twin_params("ego4d_goalstep", DEFAULT_TWIN)
    # the score cache key separates the twins; the default's is the default twin's
    keys = {t: cache_key("htstep", twin_params("htstep", t)) for t in TWINS}
    assert keys["iid"] != keys["pinned"] and keys["iid"].relpath() != keys["pinned"].relpath()
    assert cache_key("htstep") == keys[DEFAULT_TWIN]
    for bad in ("simulated:sticky", "simulated:", "simulated:iid:x"):
        with pytest.raises(ValueError, match="expected 'simulated' or one of"):
            sources.observations("htstep", bad, limit=1)
