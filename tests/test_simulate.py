"""Tests of the simulated observation source (baglm_nb.core.simulate)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baglm_nb.core.simulate import (
    CALIBRATED_SIGNAL,
    LABEL,
    Calibration,
    SimulatedScores,
    SimulationParams,
    calibrate,
    default_params,
    offline_recall,
    per_second,
    segment_truth,
    simulate_dataset,
    simulate_video,
)
from baglm_nb.inputs.datasets import Segment, Video, load_dataset
from baglm_nb.inputs.paper import paper_value


@pytest.fixture(scope="module")
def htstep60() -> list[Video]:
    return load_dataset("htstep")[:60]


def toy_video() -> Video:
    """fps 1, 20 frames: S = 10 segments of 2 s, T = 20 rows; steps a, b, c."""
    segments = (
        Segment(2.0, 7.0, "a", 0),  # rows 2..7 -> segments 1, 2, 3
        Segment(11.0, 14.2, "b", 1),  # rows 11..15 -> segments 5 (tie with c), 6, 7
        Segment(8.6, 9.2, "c", 2),  # rows 8..10 -> segment 4
    )
    return Video(
        dataset="htstep",
        uid="toy",
        task="t",
        group="g",
        goal="goal",
        llm_goal="goal",
        steps=("a", "b", "c"),
        segments=segments,
        fps=1.0,
        num_frames=20,
        duration=20.0,
    )


def test_segment_truth_and_fraction() -> None:
    truth, fraction = segment_truth(toy_video())
    assert truth.tolist() == [3, 0, 0, 0, 2, 1, 1, 1, 3, 3]
    expected = [np.nan, 0.2, 0.6, 1.0, 0.4 / 0.6, 0.0, 2.0 / 3.2, 1.0, np.nan, np.nan]
    np.testing.assert_allclose(fraction, expected, equal_nan=True)


def test_progress_digits_and_shapes() -> None:
    video = toy_video()
    params = SimulationParams(progress_noise=0.0, progress_width=0.0)
    s = simulate_video(video, params)
    assert s.vsg.shape == (10, 4) and s.progress.shape == (10, 3, 10) and s.truth.shape == (10,)
    digits = s.progress.argmax(axis=-1)
    expected = np.zeros((10, 3), dtype=int)
    for seg, (step, frac) in enumerate(zip(s.truth, s.fraction, strict=True)):
        if step < 3:
            expected[seg, step] = int(np.rint(9 * frac))
    np.testing.assert_array_equal(digits, expected)
    np.testing.assert_allclose(s.progress.max(axis=-1), 1.0)
    vsg, prog = per_second(s)
    assert vsg.shape == (video.num_rows(), 4) and prog.shape == (video.num_rows(), 3, 10)
    np.testing.assert_array_equal(vsg[::2], s.vsg)
    np.testing.assert_array_equal(vsg[1::2], s.vsg)


def _numpy_digits(centre: np.ndarray, width: float) -> np.ndarray:
    """The progress digits as plain numpy writes them (the slow reference of
    :func:`baglm_nb.core.progress_digits.digits`): the point mass of the nearest digit for
    ``width = 0`` or a centre that is not finite, else the softmax of
    ``-0.5 ((digit - centre) / width)^2``."""
    nearest = np.clip(np.nan_to_num(np.rint(centre), posinf=9, neginf=0), 0, 9).astype(int)
    point = np.zeros(centre.shape + (10,))
    np.put_along_axis(point, nearest[..., None], 1.0, axis=-1)
    if width <= 0:
        return point
    z = np.arange(10.0) - np.where(np.isfinite(centre), centre, 0.0)[..., None]
    z /= width
    np.square(z, out=z)
    z *= -0.5
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return np.where(np.isfinite(centre)[..., None], z, point)


@pytest.mark.parametrize("width", [0.0, 0.3, 1.0, 1.7, 5.0])
def test_progress_digits_give_the_numpy_softmax_floats_bit_for_bit(width: float) -> None:
    from baglm_nb.core.progress_digits import digits

    rng = np.random.default_rng(7)
    special = np.array([np.nan, np.inf, -np.inf, -3.2, 0.0, 4.5, 9.0, 12.7])
    for centre in (
        rng.uniform(-2, 11, size=(37, 6)),  # (segments, steps), as the simulation has them
        rng.uniform(-2, 11, size=50),
        np.zeros((0, 4)),
        special,
        special.reshape(2, 4),
    ):
        got = digits(centre, width)
        assert got.shape == centre.shape + (10,)
        np.testing.assert_array_equal(got, _numpy_digits(centre, width))


def test_confusion_bonus_on_ground_truth_neighbours() -> None:
    params = SimulationParams(signal=4.0, noise=0.0, confusion=0.5)
    s = simulate_video(toy_video(), params)
    logp = np.log(s.vsg)
    # Order of first occurrences: a (2.0), c (8.6), b (11.0). Segment 1 is a: c is adjacent.
    np.testing.assert_allclose(logp[1, 2] - logp[1, 1], 2.0)
    np.testing.assert_allclose(logp[1, 0] - logp[1, 1], 4.0)
    # Segment 4 is c: a and b are both adjacent; none gets nothing.
    np.testing.assert_allclose(logp[4, [0, 1, 2]] - logp[4, 3], [2.0, 2.0, 4.0])


def test_shapes_sums_and_label(htstep60: list[Video]) -> None:
    sims = simulate_dataset("htstep", videos=htstep60, show_progress=False)
    assert list(sims) == [v.uid for v in htstep60]
    for v in htstep60:
        s = sims[v.uid]
        assert isinstance(s, SimulatedScores)
        assert s.label == LABEL == "simulated"
        k, n = v.num_steps, v.num_rows() // 2
        assert s.vsg.shape == (n, k + 1) and s.vsg.dtype == np.float64
        assert s.progress.shape == (n, k, 10) and s.progress.dtype == np.float64
        np.testing.assert_allclose(s.vsg.sum(axis=1), 1.0)
        np.testing.assert_allclose(s.progress.sum(axis=2), 1.0)
        assert ((s.truth >= 0) & (s.truth <= k)).all()
        assert np.isnan(s.fraction[s.truth == k]).all()
        assert ((s.fraction[s.truth < k] >= 0) & (s.fraction[s.truth < k] <= 1)).all()
    with pytest.raises(TypeError):
        SimulatedScores("x", s.vsg, s.progress, s.truth, s.fraction, s.params, label="real")


def test_reproducible_per_video(htstep60: list[Video]) -> None:
    params = SimulationParams(confusion=0.3)
    full = simulate_dataset("htstep", params, htstep60, show_progress=False)
    subset = simulate_dataset("htstep", params, htstep60[30:33], show_progress=False)
    again = simulate_video(htstep60[31], params)
    for s in (subset[htstep60[31].uid], again):
        np.testing.assert_array_equal(s.vsg, full[htstep60[31].uid].vsg)
        np.testing.assert_array_equal(s.progress, full[htstep60[31].uid].progress)
    other = simulate_video(htstep60[31], dataclasses.replace(params, seed=1))
    assert not np.array_equal(other.vsg, again.vsg)


def test_signal_controls_argmax_agreement(htstep60: list[Video]) -> None:
    chance = SimulationParams(signal=0.0, noise=1.0, seed=3)
    agree, expected = [], []
    for s, v in zip(
        simulate_dataset("htstep", chance, htstep60, show_progress=False).values(),
        htstep60,
        strict=True,
    ):
        agree.append(s.vsg.argmax(axis=1) == s.truth)
        expected.append(np.full(s.num_segments, 1.0 / (v.num_steps + 1)))
    assert abs(np.concatenate(agree).mean() - np.concatenate(expected).mean()) < 0.02
    strong = SimulationParams(signal=50.0, noise=1.0)
    for s in simulate_dataset("htstep", strong, htstep60, show_progress=False).values():
        np.testing.assert_array_equal(s.vsg.argmax(axis=1), s.truth)


def test_off_step_progress_noisy_or_zero() -> None:
    """Off-step digits: the true step's noise model centred at 0, or a point mass on 0."""
    video = toy_video()
    noisy = simulate_video(video, SimulationParams(progress_noise=0.0, progress_width=1.0))
    zero = simulate_video(video, SimulationParams(progress_width=1.0, off_step_progress="zero"))
    np.testing.assert_array_equal(noisy.vsg, zero.vsg)  # VSG draws come first
    digits = np.arange(10.0)
    centred = np.exp(-0.5 * digits**2) / np.exp(-0.5 * digits**2).sum()
    for seg, step in enumerate(noisy.truth):
        for k in range(3):
            if k == step:
                continue
            np.testing.assert_allclose(noisy.progress[seg, k], centred)  # no jitter: centre 0
            np.testing.assert_array_equal(zero.progress[seg, k], np.eye(10)[0])
    on = noisy.truth < 3
    rows = np.flatnonzero(on)
    np.testing.assert_array_equal(  # the true step keeps its own digits in both models
        noisy.progress[rows, noisy.truth[on]].argmax(-1),
        np.rint(9 * noisy.fraction[on]).astype(int),
    )
    jitter = simulate_video(video, SimulationParams(progress_noise=1.0))
    expected = (jitter.progress * digits).sum(-1) / 9  # every off-step row has some progress
    assert (expected[~np.eye(3, dtype=bool)[np.minimum(jitter.truth, 2)]] > 0).all()
    with pytest.raises(ValueError, match="off_step_progress"):
        SimulationParams(off_step_progress="oracle")


def test_default_params_are_calibrated_per_dataset() -> None:
    """Each dataset's stored signal gives the paper's off-the-shelf R@1 within 0.3 points (the
    default twin's; ``calibrate --stored`` checks both twins)."""
    from baglm_nb.core.simulate import DEFAULT_TWIN, IID, twin_params

    assert SimulationParams().signal == CALIBRATED_SIGNAL["htstep"]
    for name, signal in CALIBRATED_SIGNAL.items():
        assert twin_params(name, IID) == SimulationParams(signal=signal)
        assert default_params(name) == twin_params(name, DEFAULT_TWIN)
        value = offline_recall(name)  # params None: the dataset's default
        assert abs(value - paper_value("off_the_shelf", name)) <= 0.3, (name, value)
    assert default_params("coin", seed=4).seed == 4
    video = load_dataset("coin")[0]
    np.testing.assert_array_equal(
        simulate_video(video).vsg, simulate_video(video, default_params("coin")).vsg
    )


def test_params_validation() -> None:
    with pytest.raises(ValueError):
        SimulationParams(noise=-1.0)
    with pytest.raises(ValueError):
        SimulationParams(segment_duration=0)
    assert SimulationParams(signal=2.0).effective_none_signal == 2.0
    assert SimulationParams(signal=2.0, none_signal=0.5).effective_none_signal == 0.5


def test_offline_recall_monotone_and_calibrate(htstep60: list[Video]) -> None:
    values = [
        offline_recall("htstep", SimulationParams(signal=s), htstep60) for s in (0.5, 1.5, 3.0)
    ]
    assert values[0] < values[1] < values[2]
    cal = calibrate("htstep", target=40.0, tol=1.0, videos=htstep60)
    assert isinstance(cal, Calibration)
    assert abs(cal.achieved - 40.0) <= 1.0 and cal.converged
    assert cal.params.signal == cal.signal and cal.iterations == len(cal.history)
    assert offline_recall("htstep", cal.params, htstep60) == cal.achieved
    assert "simulated" in cal.report()
    # the default target is the dataset's off-the-shelf R@1 in the paper
    first = calibrate("coin", tol=5.0, videos=load_dataset("coin")[:40])
    assert first.target == paper_value("off_the_shelf", "coin")


# --------------------------------------------------------------------------------------------
# noise_corr: temporally correlated noise (AR(1) across segments)


@pytest.mark.parametrize("dataset", ["htstep", "crosstask", "ego4d_goalstep", "coin"])
def test_noise_corr_zero_is_the_iid_simulation_bit_for_bit(dataset, monkeypatch) -> None:
    """At ``noise_corr = 0`` (the i.i.d. twin) the simulation is the i.i.d. one, bit for bit:
    the same arrays as with the AR(1) step removed altogether, computed in the same run (a
    stored digest of floats would be machine-specific: numpy's SIMD exp and log differ between
    CPU families). The i.i.d. twin's caches keep their folders (no ``corr`` in the key)."""
    from baglm_nb.core import simulate as sim_module
    from baglm_nb.core.simulate import IID, PINNED, PINNED_NOISE_CORR, cache_key, twin_params

    video = load_dataset(dataset)[0]
    iid_params = twin_params(dataset, IID)
    with_ar1 = [simulate_video(video, iid_params)]
    with_ar1.append(simulate_video(video, twin_params(dataset, PINNED, signal=iid_params.signal,
                                                      noise_corr=0.0)))  # fmt: skip
    correlated = simulate_video(video, twin_params(dataset, IID, noise_corr=0.8))
    monkeypatch.setattr(sim_module, "ar1", lambda x, corr: x)  # the i.i.d. simulation
    iid = simulate_video(video, iid_params)
    patched = simulate_video(video, twin_params(dataset, IID, noise_corr=0.8))
    np.testing.assert_array_equal(patched.vsg, iid.vsg)  # the patch took: no AR(1) step left
    for sim in with_ar1:
        np.testing.assert_array_equal(sim.vsg, iid.vsg)
        np.testing.assert_array_equal(sim.progress, iid.progress)
    assert not np.array_equal(correlated.vsg, iid.vsg)  # the AR(1) step is on the path
    assert "corr" not in cache_key(dataset, iid_params).prompt_version
    pinned = cache_key(dataset, twin_params(dataset, PINNED)).prompt_version
    assert pinned.endswith(f"_corr{PINNED_NOISE_CORR:g}")
    assert cache_key(dataset, twin_params(dataset, IID, noise_corr=0.8)).prompt_version.endswith(
        "_corr0.8"
    )


def _long_video(seconds: int) -> Video:
    """No annotated step: every segment is none, so the VSG logits are the noise alone."""
    return Video(
        dataset="htstep",
        uid="long",
        task="t",
        group="g",
        goal="goal",
        llm_goal="goal",
        steps=("a", "b", "c"),
        segments=(),
        fps=1.0,
        num_frames=seconds,
        duration=float(seconds),
    )


@pytest.mark.parametrize("corr", [0.0, 0.5, 0.8, -0.4])
def test_noise_corr_is_the_lag1_autocorrelation_and_keeps_the_variance(corr) -> None:
    from baglm_nb.core.simulate import ar1

    x = ar1(np.random.default_rng(1).standard_normal((40_000, 3)), corr)
    r1 = np.mean([np.corrcoef(x[:-1, i], x[1:, i])[0, 1] for i in range(3)])
    assert abs(r1 - corr) < 0.02 and abs(x.var() - 1.0) < 0.03
    # in the simulation: with signal 0, log-probability differences are eps_a - eps_b
    params = SimulationParams(signal=0.0, noise=1.0, noise_corr=corr)
    sim = simulate_video(_long_video(40_000), params)
    diff = np.log(sim.vsg[:, 0]) - np.log(sim.vsg[:, 1])
    assert len(diff) == 20_000
    assert abs(np.corrcoef(diff[:-1], diff[1:])[0, 1] - corr) < 0.03
    assert abs(diff.var() - 2.0) < 0.1  # two unit-variance draws, stationary


def _lfilter_ar1(x: np.ndarray, corr: float) -> np.ndarray:
    """The AR(1) recursion as scipy computes it (what :func:`ar1` replaced, bit for bit)."""
    from scipy.signal import lfilter

    if corr == 0 or len(x) == 0:
        return x
    gain = np.sqrt(1.0 - corr * corr)
    return lfilter([gain], [1.0, -corr], x, axis=0, zi=((1.0 - gain) * x[:1]))[0]


def test_ar1_gives_scipy_lfilter_floats_bit_for_bit() -> None:
    from baglm_nb.core.simulate import ar1

    rng = np.random.default_rng(3)
    for case in range(120):
        shape = [
            (int(rng.integers(1, 400)),),
            (int(rng.integers(1, 400)), int(rng.integers(1, 14))),
        ][case % 2] + ((2,) if case % 7 == 0 else ())
        x = rng.standard_normal(shape) * 10.0 ** float(rng.integers(-3, 4))
        corr = float(rng.uniform(-0.99, 0.99))
        got, want = ar1(x, corr), _lfilter_ar1(x, corr)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want), (shape, corr)


def test_simulated_datasets_are_those_of_scipy_lfilter(monkeypatch) -> None:
    """The simulated numbers did not change when ``ar1`` stopped calling scipy: every dataset's
    default twin (AR(1) noise) simulated both ways, in this run, gives the same floats. Every
    10th video of each dataset (short and long ones alike; the full datasets agreed as well)."""
    from baglm_nb.core import simulate as sim_module
    from baglm_nb.inputs.datasets import DATASETS

    for name in DATASETS:
        videos = load_dataset(name)[::10]
        params = default_params(name)
        assert params.noise_corr > 0
        ours = simulate_dataset(name, params, videos, show_progress=False)
        with monkeypatch.context() as patched:
            patched.setattr(sim_module, "ar1", _lfilter_ar1)
            theirs = simulate_dataset(name, params, videos, show_progress=False)
        for uid, sim in ours.items():
            assert np.array_equal(sim.vsg, theirs[uid].vsg), (name, uid)
            assert np.array_equal(sim.progress, theirs[uid].progress), (name, uid)


def test_noise_corr_literal_recursion_and_validation() -> None:
    from baglm_nb.core.simulate import ar1

    x = np.random.default_rng(2).standard_normal((50, 2))
    y = np.empty_like(x)
    y[0] = x[0]
    for s in range(1, 50):
        y[s] = 0.7 * y[s - 1] + np.sqrt(1 - 0.49) * x[s]
    assert np.allclose(ar1(x, 0.7), y, rtol=0, atol=1e-12)
    assert ar1(x, 0.0) is x
    for bad in (1.0, -1.0, 1.5):
        with pytest.raises(ValueError, match="noise_corr must be in"):
            SimulationParams(noise_corr=bad)


def test_noise_corr_through_the_observations_setting() -> None:
    """Notebooks pass it as the simulated source's ``params`` (core.sources)."""
    from baglm_nb.core import sources
    from baglm_nb.core.simulate import ILLUSTRATIVE_NOISE_CORR

    params = default_params("htstep", noise_corr=ILLUSTRATIVE_NOISE_CORR)
    corr = sources.observations("htstep", "simulated", limit=2, params=params)
    iid = sources.observations("htstep", "simulated:iid", limit=2)
    uid = corr.uids()[0]
    assert corr.label == iid.label == "simulated" and corr.uids() == iid.uids()
    assert corr.vsg[uid].shape == iid.vsg[uid].shape
    assert not np.array_equal(corr.vsg[uid], iid.vsg[uid])
    assert np.allclose(corr.vsg[uid].sum(axis=1), 1.0)


def test_a_signal_sweep_gives_simulate_vsgs_floats_and_the_truth_is_shared(htstep60) -> None:
    """The calibration's sweep draws the noise once; each signal's rows must still be what a
    fresh simulation gives, bit for bit (both twins' grids: i.i.d. and AR(1) noise, with
    confusion), and the kept segment truth is one read-only pair per video and grid."""
    from baglm_nb.core.simulate import SignalSweep, simulate_vsg, twin_params
    from baglm_nb.inputs import grid

    videos = htstep60[:12]
    for base in (
        twin_params("htstep", "iid"),
        twin_params("htstep", "pinned", confusion=0.3, segment_duration=3),
    ):
        sweep = SignalSweep("htstep", base, videos)
        d = base.segment_duration
        for signal in (0.0, 1.7, base.signal):
            params = dataclasses.replace(base, signal=signal)
            rows = sweep.vsg_rows(signal)
            for v in videos:
                fresh = grid.per_second(simulate_vsg(v, params), d)
                assert rows[v.uid].tobytes() == fresh.tobytes()
            assert sweep.recall(signal) == offline_recall("htstep", params, videos)
    truth, fraction = segment_truth(videos[0])
    again = segment_truth(videos[0])
    assert again[0] is truth and again[1] is fraction
    assert not truth.flags.writeable and not fraction.flags.writeable
    for v in load_dataset("coin")[:300]:  # S counted without the frame indices
        for d in (1, 2, 3):
            assert grid.num_segments(v.num_frames, v.fps, d) == len(
                grid.segment_frame_indices(v.num_frames, v.fps, d)
            )
