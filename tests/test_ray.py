"""Scoring and dependencies on a Ray cluster started here (127.0.0.1, 2 CPUs, one per module).

The cluster runs the tiny random-init models where the model's path on Ray is the subject: the
Ray engine's cache equals the local engine's, and a killed driver's run resumes with only the
missing videos; ``deps`` on Ray gives the local engine's matrices. Where the subject is the
engine's orchestration, the workers score with ``FrameScorer`` (a fixed function of the decoded
frames, no model to load): a worker killed on its first attempt at a video is replaced and the
video scored on the replacement (2 attempts); a video that always kills its worker ends in
``failures.json`` and the run exits 1; a failing video is recorded and an MPEG-TS remux decodes
in the worker as in the local engine. Ray's session files live in a temporary folder, and its
auth token is this module's own (an environment variable), so nothing is written to the home
directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

import numpy as np
import pytest
from busy_machine import machine_stretch
from clips import CLIPS, score_argv, short_clips
from tiny_llm import write_tiny_smollm2

# Before ``import ray``, which reads them: a local Ray node takes the machine's network address
# unless told that clusters are off (the tests only ever use the loopback address); token
# authentication with this module's own token, so Ray neither writes one to ~/.ray nor reads one
# from there; no usage statistics.
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_AUTH_MODE": "token",
    "RAY_AUTH_TOKEN": secrets.token_hex(32),
    "RAY_USAGE_STATS_ENABLED": "0",
}
os.environ.update(RAY_ENV)

ray = pytest.importorskip("ray", reason="pip install -e '.[ray]'")

from baglm_nb.apps.cli.main import main  # noqa: E402
from baglm_nb.inputs.datasets import Segment, Video, load_dataset  # noqa: E402
from baglm_nb.inputs.video import probe  # noqa: E402
from baglm_nb.models import dependencies as dep  # noqa: E402
from baglm_nb.models.llm_local import TransformersBackend  # noqa: E402
from baglm_nb.models.ray_pool import RayOptions, RayPool  # noqa: E402
from baglm_nb.models.scoring import ScorerSpec, make_scorer, score_dataset  # noqa: E402
from baglm_nb.stores.dependencies import DependencyCache  # noqa: E402
from baglm_nb.stores.scores import ScoreCache  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("one_torch_thread")]

UIDS = ["cup", "Megamind_bugy", "box"]
STEPS = ["pick up the object", "turn it", "put it down"]
MODEL = "random-init:internvl"


#: Ray's periodic book-keeping that no test here reads, off (names of Ray's ``RayConfig``; a
#: test cluster's daemons then use about a sixth less CPU while idle): event-loop statistics
#: and their dumps, metrics (collection and reports), task events (the dashboard's and state
#: API's task table), the timeline, and the memory monitor (no test runs out of memory; a
#: worker here dies by SIGKILL).
QUIET_CLUSTER = {
    "event_stats": False,
    "debug_dump_period_milliseconds": 0,
    "enable_metrics_collection": False,
    "metrics_report_interval_ms": 600_000,
    "task_events_report_interval_ms": 0,
    "enable_timeline": False,
    "memory_monitor_refresh_ms": 0,
}


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU Ray cluster on 127.0.0.1 for this module, its files in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="baglm-ray-"))  # short: Ray's socket paths
    env = {
        "RAY_agent_register_timeout_ms": "120000",  # a busy 2-core machine starts slowly
        "RAY_raylet_start_wait_time_s": "120",
        # The log monitor (which forwards the workers' output to the driver) looks for new log
        # files every 0.5 s rather than on each of its 0.1-s rounds (ray/_private/log_monitor.py:
        # what it does anyway once a node has this many log files).
        "RAY_LOG_MONITOR_MANY_FILES_THRESHOLD": "0",
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent / "ray_site"), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    }
    saved = {k: os.environ.get(k) for k in [*env, *RAY_ENV]}
    os.environ.update(env)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the killing scorer
    try:
        ray.init(
            num_cpus=2,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(folder / "r"),
            include_dashboard=False,
            logging_level="WARNING",
            _system_config=QUIET_CLUSTER,
        )
        address = ray.get_runtime_context().gcs_address
        assert address.startswith("127.0.0.1:")
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield address
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# connecting: bounded in time, Ctrl-C works, no cluster is a named error (no cluster needed)


def _score_on(
    address: str, tmp_path: Path, *extra: str, interrupt_after_s: float | None = None
) -> tuple[int, float]:
    """``score --engine ray --address ADDRESS``: (exit status, seconds); with
    ``interrupt_after_s``, a Ctrl-C (SIGINT to this process) that long after ``main`` starts
    (the annotations are written first, so the signal never lands in the test's own set-up)."""
    ann = write_annotations(tmp_path / "ann", {"cup": "HandleObject"})
    if interrupt_after_s is not None:
        threading.Timer(interrupt_after_s, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    rc = main(
        [
            *score_argv(ann, tmp_path / "cache", model=MODEL),
            "--engine",
            "ray",
            "--address",
            address,
            "--no-progress",
            *extra,
        ]
    )
    return rc, time.monotonic() - t0


@pytest.fixture
def not_connected(monkeypatch):
    """This process counts as not connected to Ray (another test may hold the module's
    cluster), and no cluster is found on this machine (others' test clusters included)."""
    from ray._private import services

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(services, "find_gcs_addresses", lambda: frozenset())
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def test_an_address_that_does_not_answer_fails_within_the_connect_timeout(
    not_connected, tmp_path, capsys
):
    rc, seconds = _score_on("127.0.0.1:1", tmp_path, "--connect-timeout", "2")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == [
        "error: cannot reach the Ray cluster at 127.0.0.1:1: Connection refused (gave up "
        "after 2 s; --connect-timeout sets the limit)"
    ]
    assert 2 <= seconds < 2 + 3 * machine_stretch(), seconds  # busy_machine.py


def test_a_listener_that_is_no_ray_cluster_fails_within_the_connect_timeout(not_connected):
    from baglm_nb.models.ray_connect import RayConnectError, connect

    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        t0 = time.monotonic()
        with pytest.raises(RayConnectError, match="does not answer as a Ray cluster"):
            connect(f"127.0.0.1:{silent.getsockname()[1]}", timeout=1.5)
        assert time.monotonic() - t0 < 1.5 + 1.5 * machine_stretch()


@pytest.fixture
def default_sigint():
    """Python's own Ctrl-C handler, as a CLI process has it (a test run earlier in this worker
    may have left another one installed); restored afterwards."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_works_while_connecting(not_connected, default_sigint, tmp_path, capsys):
    rc, seconds = _score_on(
        "127.0.0.1:1", tmp_path, "--connect-timeout", "30", interrupt_after_s=1.0
    )
    assert rc == 130 and seconds < 1 + 3 * machine_stretch(), seconds
    assert capsys.readouterr().err.strip().splitlines() == ["error: interrupted"]


def test_address_auto_without_a_cluster_is_a_named_error(not_connected, tmp_path, capsys):
    rc, seconds = _score_on("auto", tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == [
        "error: --address auto: no running Ray cluster found on this machine (start one with "
        "`ray start --head`, or pass --address HOST:PORT of the head node)"
    ]
    assert seconds < 5


def test_a_non_positive_connect_timeout_is_bad_input(tmp_path, capsys):
    rc, _ = _score_on("127.0.0.1:1", tmp_path, "--connect-timeout", "0")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["error: --connect-timeout must be > 0 seconds, got 0.0"]


def write_annotations(folder: Path, goals: dict[str, str], videos: Path = CLIPS) -> Path:
    """A COIN-format annotation file of the clips in ``videos``, one task (goal) per clip."""
    records = []
    for uid, goal in goals.items():
        info = probe(next(videos.glob(f"{uid}.*")))
        records.append(
            {
                "video_uid": uid,
                "video_num_frames": info.num_frames,
                "video_fps": info.fps,
                "activity": goal,
                "step_headline": STEPS,
                "clips": [
                    {
                        "annotations": [
                            {
                                "language_queries": [
                                    {"clip_start_sec": 0.5, "clip_end_sec": 1.5, "query": STEPS[0]}
                                ]
                            }
                        ]
                    }
                ],
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "coin_video_annots.json").write_text(json.dumps(records))
    return folder


def _arrays(cache: ScoreCache, uid: str) -> dict[str, np.ndarray]:
    v = cache.read_video(uid)
    return {"vsg": v.vsg, "progress": v.progress, "t_start": v.t_start, "t_end": v.t_end}


#: Seconds of each clip the cluster scores: 2 segments (2 s at 2 fps), so that a killed driver
#: has a second and third video still to score when its first is written.
CLIP_S = 4.0


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    """The clips the cluster scores, one per uid of ``UIDS``: 4-s, 48x36 cuts of cup.mp4 (each
    uid another start, ``clips.short_clips``). The Ray engine hands the worker a path and gets
    arrays back whatever the file's length or size; these cut the model's work per video (2
    segments rather than 4 to 7 of the full clips) in every Ray worker and local comparison.
    The full clips' containers and decoders are tested in test_video.py."""
    return short_clips(tmp_path_factory.mktemp("videos"), UIDS, CLIP_S)


@pytest.fixture(scope="module")
def tiny_scorer():
    """The local engine's scorer of ``MODEL`` (seeded weights, so it equals each worker's)."""
    return make_scorer(MODEL)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, videos, tiny_scorer):
    """The local engine's cache of the three clips (one task), to compare the Ray runs with
    (one segment per batch, as the Ray runs: the batch size changes the float rounding)."""
    folder = tmp_path_factory.mktemp("reference")
    ann = write_annotations(folder / "ann", {u: "HandleObject" for u in UIDS}, videos)
    summary = score_dataset(
        "coin",
        videos,
        tiny_scorer,
        root=folder / "cache",
        annotations=ann,
        show_progress=False,
        batch_segments=1,
    )
    assert sorted(summary["scored"]) == sorted(UIDS) and summary["engine"] == "local"
    return ann, ScoreCache.open(summary["cache"])


def _on(videos: Path, argv: list[str]) -> list[str]:
    """``argv`` (of ``clips.score_argv``) with ``--video-dir`` set to ``videos``."""
    argv = list(argv)
    argv[argv.index("--video-dir") + 1] = str(videos)
    return argv


def test_killed_driver_resumes_and_the_cache_equals_the_local_engine(
    cluster, reference, videos, tmp_path
):
    ann, local = reference
    root = tmp_path / "cache"
    cmd = [
        sys.executable,
        "-m",
        "baglm_nb",
        *_on(videos, score_argv(ann, root, model=MODEL)),
        "--batch-segments",
        "1",
    ]
    cmd += ["--engine", "ray", "--address", cluster, "--workers", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    files: list[Path] = []
    maps = ""
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(root.rglob("videos/*.parquet"))
            if files:  # frozen as soon as one video is seen written: it cannot finish the rest
                proc.send_signal(signal.SIGSTOP)
                break
            time.sleep(0.05)
        with contextlib.suppress(OSError):  # the libraries mapped into the running driver
            maps = Path(f"/proc/{proc.pid}/maps").read_text()
    finally:
        proc.send_signal(signal.SIGKILL)  # the driver dies; Ray ends its workers
        _, err = proc.communicate()
    assert files, err.decode()[-2000:]
    # the driver only hands videos out and writes what comes back: the workers load torch
    assert "_raylet" in maps and "libtorch" not in maps
    cache = ScoreCache.open(files[0].parent.parent)
    first = cache.uids()
    assert 1 <= len(first) < 3, "the run finished before it could be killed"
    stamps = {u: os.stat(cache.file(u)).st_mtime_ns for u in first}
    again = score_dataset(
        "coin",
        videos,
        MODEL,
        root=root,
        annotations=ann,
        batch_segments=1,
        show_progress=False,
        engine=RayOptions(workers=1),  # one worker start; the resume is the same with two
    )
    assert again["engine"] == "ray" and again["label"] == "random-init"
    assert sorted(again["already_cached"]) == sorted(first)  # only the missing were submitted
    assert sorted(again["scored"]) == sorted(set(UIDS) - set(first))
    assert again["failed"] == {} and again["attempts"] == {}
    assert {u: os.stat(cache.file(u)).st_mtime_ns for u in first} == stamps
    assert not [p for p in cache.path.rglob("*") if p.name.endswith(".tmp")]
    # the Ray run's cache is the local engine's: same folder key, equal arrays
    assert cache.path.relative_to(root) == local.path.relative_to(local.root)
    assert cache.uids() == local.uids() == sorted(UIDS)
    for uid in UIDS:
        for name, arr in _arrays(local, uid).items():
            np.testing.assert_array_equal(_arrays(cache, uid)[name], arr, err_msg=f"{uid} {name}")
        assert cache.read_video(uid).steps == tuple(STEPS)
        assert set(cache.read_video(uid).timings) == {"decode_s", "vsg_s", "progress_s"}


class FrameScorer:
    """A scorer whose scores are a fixed function of the decoded frames alone: each segment's
    per-frame, per-channel pixel means through fixed random weights, then a softmax (VSG over
    the K steps and none, progress over the 10 digits).

    For the tests whose subject is the Ray engine's orchestration (a worker replaced, a video
    recorded as failed, an odd container decoded in the worker), not the model: a Ray run and
    the local engine agree exactly only if the worker decoded the same frames of the same
    video and the driver stored what came back, and a worker that builds it imports numpy only
    (no transformers model: its load is most of a model worker's start). The tiny model's own
    path on Ray, preprocessing and forward passes, is compared with the local engine by
    ``test_killed_driver_resumes_and_the_cache_equals_the_local_engine``."""

    model_id = "frame-means"
    label = "random-init"  # not a trained model's scores (the cache folder says so)

    def score_segments(self, frames, goal, steps, **options):
        x = np.asarray(frames, dtype=np.float64)  # (S, F, C, H, W) uint8 frames
        features = x.mean(axis=(3, 4)).reshape(len(x), -1) / 255.0  # (S, F*C)
        rng = np.random.default_rng(features.shape[1])
        k = len(steps)
        vsg = _softmax(features @ rng.standard_normal((features.shape[1], k + 1)))
        logits = features @ rng.standard_normal((features.shape[1], k * 10))
        progress = _softmax(logits.reshape(len(x), k, 10))
        return types.SimpleNamespace(vsg=vsg, progress=progress, timings={})


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@dataclasses.dataclass(frozen=True)
class KillingSpec(ScorerSpec):
    """:class:`FrameScorer`, but its worker kills itself (SIGKILL) when it starts a video whose
    goal is in ``kill``, on that video's first ``kill[goal]`` attempts (counted in ``folder``).

    The scorer is built on the worker's first batch that is not killed, as a model would be
    loaded: a worker that dies mid-video dies the same way with or without a model in memory."""

    kill: tuple[tuple[str, int], ...] = ()
    folder: str = ""

    def __call__(self):
        with open(Path(self.folder) / "workers", "a") as f:  # one line per worker built
            f.write(f"{os.getpid()}\n")
        return _Killing(FrameScorer, self)


class _Killing:
    model_id, label = FrameScorer.model_id, FrameScorer.label  # reported before building

    def __init__(self, build, spec: KillingSpec) -> None:
        self.build, self.scorer, self.seen = build, None, set()
        self.kill, self.folder = dict(spec.kill), Path(spec.folder)

    def score_segments(self, frames, goal, steps, **options):
        if goal in self.kill and goal not in self.seen:  # the first batch of this attempt
            self.seen.add(goal)
            with open(self.folder / f"{goal}.attempts", "a") as f:  # pid, built, loaded
                loaded = " ".join(str(name in sys.modules) for name in ("numba", "pandas"))
                f.write(f"{os.getpid()} {self.scorer is not None} {loaded}\n")
            tries = len((self.folder / f"{goal}.attempts").read_text().splitlines())
            if tries <= self.kill[goal]:
                os.kill(os.getpid(), signal.SIGKILL)
        if self.scorer is None:
            self.scorer = self.build()
        return self.scorer.score_segments(frames, goal, steps, **options)


def test_dead_worker_is_replaced_and_a_poison_video_is_recorded(
    cluster, videos, tmp_path, monkeypatch, capsys
):
    goals = {"cup": "killed once", "Megamind_bugy": "always killed"}
    ann = write_annotations(tmp_path / "ann", goals, videos)
    spec = KillingSpec(
        MODEL, kill=(("killed once", 1), ("always killed", 99)), folder=str(tmp_path)
    )
    monkeypatch.setattr("baglm_nb.apps.cli.score.scorer_spec", lambda args: spec)
    starts = []
    start = RayPool._start

    def counted(pool):
        starts.append(1)
        start(pool)

    monkeypatch.setattr(RayPool, "_start", counted)
    rc = main(
        [
            *_on(videos, score_argv(ann, tmp_path / "cache", model=MODEL)),
            "--engine",
            "ray",
            "--workers",
            "2",
            "--max-attempts",
            "2",
        ]
    )
    out = capsys.readouterr().out
    summary = json.loads(out)  # nothing but the summary on stdout
    assert rc == 1
    assert summary["scored"] == 1 and summary["attempts"] == {"cup": 2, "Megamind_bugy": 2}
    assert summary["failed"]["Megamind_bugy"].startswith("worker died 2 times")
    # every attempt ran in its own worker process: killed ones are replaced, not reused
    attempts = []
    for goal in ("killed once", "always killed"):
        lines = [ln.split() for ln in (tmp_path / f"{goal}.attempts").read_text().splitlines()]
        pids = [pid for pid, *_ in lines]
        assert len(pids) == len(set(pids)) == 2
        attempts += lines
    # a worker loads only what its object needs: one that dies before building its scorer
    # has not imported numba (the frame resizing of a model's preprocessing), though it has
    # decoded its first batch; and no worker imports pandas (the driver alone writes caches)
    fresh = [numba for _, built, numba, _ in attempts if built == "False"]
    assert fresh and set(fresh) == {"False"}, attempts
    assert {pandas for *_, pandas in attempts} == {"False"}, attempts
    # 2 workers and 3 deaths: the last death leaves no video waiting for a worker (a
    # replacement per death would start 5), so at most 2 replacements were started
    assert 3 <= len(starts) <= 4, starts
    assert len((tmp_path / "workers").read_text().split()) <= len(starts)
    cache = ScoreCache.open(summary["cache"])
    assert cache.uids() == ["cup"]
    failures = json.loads((Path(summary["cache"]) / "failures.json").read_text())
    assert list(failures) == ["Megamind_bugy"]
    assert failures["Megamind_bugy"].startswith("worker died 2 times")
    # the replacement scored cup like any worker: same numbers as the local engine
    video = next(v for v in load_dataset("coin", ann) if v.uid == "cup")
    local = score_dataset(
        "coin",
        videos,
        FrameScorer(),
        root=tmp_path / "local",
        videos=[video],
        show_progress=False,
    )
    np.testing.assert_array_equal(
        cache.read_video("cup").vsg, ScoreCache.open(local["cache"]).read_video("cup").vsg
    )


@dataclasses.dataclass(frozen=True)
class FailingSpec(ScorerSpec):
    """:class:`FrameScorer`, but scoring a video whose goal is ``fail`` raises a MemoryError."""

    fail: str = ""

    def __call__(self):
        return _Failing(FrameScorer(), self.fail)


class _Failing:
    def __init__(self, scorer, fail: str) -> None:
        self.scorer, self.fail = scorer, fail
        self.model_id, self.label = scorer.model_id, scorer.label

    def score_segments(self, frames, goal, steps, **options):
        if goal == self.fail:
            raise MemoryError("cannot allocate 1.46 PiB")
        return self.scorer.score_segments(frames, goal, steps, **options)


def test_a_failing_video_is_recorded_on_ray_and_an_mpegts_remux_scores(
    cluster, tmp_path, monkeypatch, capsys
):
    """Under Ray as in the local engine: a MemoryError on one video is recorded (no
    traceback) and the run goes on; the MPEG-TS remux of box.mp4 (torchcodec: 4.5e-12 fps)
    scores like the local engine scores it. The remux is of box.mp4's first 4 s (a stream copy,
    2 segments rather than 7): its timing is as odd as the whole file's (torchcodec's duration
    of 1e14 s, the first frame at 1.4 s), so it takes the same decoding path; cup fails at its
    first batch, so the whole cup.mp4 costs nothing more. Both engines score with
    ``FrameScorer``: equal scores mean the worker decoded the remux's frames as the local engine
    does."""
    videos = tmp_path / "videos"
    videos.mkdir()
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-loglevel",
            "error",
            "-i",
            str(CLIPS / "box.mp4"),
            "-t",
            str(CLIP_S),
            "-c:v",
            "copy",
            "-f",
            "mpegts",
            str(videos / "box.ts"),
        ],
        check=True,
        timeout=60,
    )
    (videos / "cup.mp4").symlink_to(CLIPS / "cup.mp4")
    ann = write_annotations(
        tmp_path / "ann", {"cup": "out of memory", "box": "HandleObject"}, videos
    )
    monkeypatch.setattr(
        "baglm_nb.apps.cli.score.scorer_spec", lambda args: FailingSpec(MODEL, fail="out of memory")
    )
    rc = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(videos),
            "--model",
            MODEL,
            "--annotations",
            str(ann),
            "--cache-root",
            str(tmp_path / "cache"),
            "--engine",
            "ray",
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert rc == 1 and summary["scored"] == 1 and "Traceback" not in err, err[-2000:]
    assert summary["failed"] == {
        "cup": f"{(videos / 'cup.mp4').resolve()}: MemoryError: cannot allocate 1.46 PiB"
    }
    box = next(v for v in load_dataset("coin", ann) if v.uid == "box")
    local = score_dataset(
        "coin",
        videos,
        FrameScorer(),  # the frames decoded locally, scored as the worker scored its own
        root=tmp_path / "local",
        videos=[box],
        show_progress=False,
    )
    np.testing.assert_array_equal(
        ScoreCache.open(summary["cache"]).read_video("box").vsg,
        ScoreCache.open(local["cache"]).read_video("box").vsg,
    )


def _video(uid: str, group: str, steps: list[str]) -> Video:
    seg = (Segment(0.0, 1.0, steps[0], 0),)
    return Video("toy", uid, group, group, "Make tea", "Make tea", tuple(steps), seg, 1.0, 10, 10.0)


@pytest.fixture(scope="module")
def tiny_llm(tmp_path_factory) -> Path:
    """A folder of a tiny random-init LLM of SmolLM2's architecture, with SmolLM2's real
    tokenizer and chat template (``tests/tiny_llm.py``): it loads and scores through the same
    ``TransformersBackend.from_pretrained`` path as the real model, in a fraction of its load
    and forward time (the Ray path does not depend on the model's size; ``load_smollm2`` itself
    is tested in test_dependencies.py)."""
    return write_tiny_smollm2(tmp_path_factory.mktemp("tiny-llm"))


def test_deps_on_ray_equal_the_local_matrices(cluster, tiny_llm, tmp_path):
    videos = [
        _video("v1", "tea", ["Boil the water.", "Pour the water into the cup.", "Add milk."]),
        _video("v2", "toast", ["Slice the bread.", "Toast the bread."]),
    ]
    factory = functools.partial(
        TransformersBackend.from_pretrained, tiny_llm, name="tiny-smollm2", batch_size=4
    )
    local = dep.build_dependencies(
        "toy", factory, tmp_path / "local", videos=videos, show_progress=False
    )
    dist = dep.build_dependencies(
        "toy",
        factory,
        tmp_path / "ray",
        videos=videos,
        show_progress=False,
        engine=RayOptions(workers=1),  # one LLM load: the groups' matrices do not need two
    )
    assert sorted(dist["computed"]) == sorted(local["computed"]) == ["tea", "toast"]
    a, b = DependencyCache.open(local["path"]), DependencyCache.open(dist["path"])
    assert b.key == a.key and b.path.relative_to(tmp_path / "ray") == a.path.relative_to(
        tmp_path / "local"
    )
    for g in ("tea", "toast"):
        np.testing.assert_array_equal(b.read(g), a.read(g))
        assert b.steps(g) == a.steps(g)
