"""follow(): real clips through a tiny random-init scorer, a growing file, a URL, a broken file,
and the HTML report opened in headless Chromium; ``follow --replay`` on the command line
(simulated on demand, a cache, listing the videos, one-line errors, the ground truth in the
report) and the README's follow commands, run as written."""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from busy_machine import machine_stretch
from cli_runs import one_error_line, run_cli, run_main
from range_server import serve
from stream_servers import ffmpeg

from baglm_nb.apps.online import follow
from baglm_nb.apps.online.report import RunReport, latency_figure, write_html_report
from baglm_nb.core.online import OnlineGrounder
from baglm_nb.core.simulate import write_simulated_cache
from baglm_nb.inputs.datasets import load_dataset
from baglm_nb.inputs.grid import ground_truth, num_segments
from baglm_nb.inputs.video import probe
from baglm_nb.models.scoring import make_scorer

CLIPS = Path(__file__).parent / "data" / "videos"
STEPS = ["pick up the cup", "turn the cup", "put the cup down"]


@pytest.fixture(scope="module")
def scorer():
    return make_scorer("random-init:internvl")


def grounder(scorer) -> OnlineGrounder:
    chain = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    return OnlineGrounder(scorer, "handle a cup", STEPS, chain, source="random-init")


@pytest.fixture(scope="module")
def cup_run(scorer) -> tuple[list, list[str], float]:
    """cup.mp4 followed (the tiny model, the published grid), once for the tests below (what a
    run yields, a reference, the latency bars, the report in a browser): its estimates, the
    reasons passed to ``on_end`` and :func:`machine_stretch` measured as the run ended."""
    ends: list[str] = []
    ests = list(follow(CLIPS / "cup.mp4", grounder(scorer), on_end=ends.append))
    return ests, ends, machine_stretch()


@pytest.fixture(scope="module")
def cup_followed(cup_run) -> list:
    """:func:`cup_run`'s estimates."""
    return cup_run[0]


def expected_segments(path) -> int:
    info = probe(path)
    return num_segments(info.num_frames, info.fps)


def test_follow_a_file_scores_every_segment(scorer, cup_run):
    ests, ends, stretch = cup_run
    n = expected_segments(CLIPS / "cup.mp4")
    assert [e.segment for e in ests] == list(range(n)) and n == 4
    assert ends == [f"source ended after {n} segments"]
    for e in ests:
        assert e.belief.sum() == pytest.approx(1.0) and e.latency["score"] > 0
        assert e.latency["decode"] > 0 and e.latency["filter"] < 0.5 * stretch
    # the same frames pushed by hand give the same beliefs
    from baglm_nb.inputs.video import iter_segments

    g = grounder(scorer)
    frames = [f for b in iter_segments(CLIPS / "cup.mp4", batch_segments=1) for f in b.frames]
    by_hand = [g.push(f).belief for f in frames]
    np.testing.assert_allclose(np.stack(by_hand), np.stack([e.belief for e in ests]), atol=1e-9)


def test_follow_a_growing_file(scorer, tmp_path):
    full = tmp_path / "full.ts"
    subprocess.run(
        [
            "ffmpeg",
            "-loglevel",
            "error",
            "-i",
            str(CLIPS / "cup.mp4"),
            "-an",
            "-c:v",
            "copy",
            "-f",
            "mpegts",
            str(full),
        ],
        check=True,
    )
    data = full.read_bytes()
    live = tmp_path / "live.ts"
    live.write_bytes(data[: len(data) // 3])

    def record():
        time.sleep(0.8)
        with open(live, "ab") as f:
            f.write(data[len(data) // 3 :])

    # longer than the pause on a busy machine; the stall after the last frame is the test's
    # wait, so it is kept short (the pause is still a wait at the file's end: the first third
    # holds one segment, decoded and scored within it)
    timeout = round(2.0 * machine_stretch(), 1)
    threading.Thread(target=record, daemon=True).start()
    ends: list[str] = []
    ests = list(
        follow(live, grounder(scorer), growing=True, timeout=timeout, poll=0.3, on_end=ends.append)
    )
    assert [e.segment for e in ests] == list(range(expected_segments(full)))
    assert ends and ends[0].startswith(f"no new frames for {timeout:g} s")


def test_follow_a_url(scorer, cup_followed):
    with serve(CLIPS) as base:
        ests = list(follow(f"{base}/cup.mp4", grounder(scorer)))
    local = cup_followed
    np.testing.assert_allclose([e.belief for e in ests], [e.belief for e in local], atol=1e-9)


def test_a_broken_source_stops_with_a_clear_message(scorer, tmp_path):
    broken = tmp_path / "broken.mp4"
    data = (CLIPS / "cup.mp4").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    ends: list[str] = []
    assert list(follow(broken, grounder(scorer), on_end=ends.append)) == []
    assert "source broke after 0 segments" in ends[0] and "broken.mp4" in ends[0]


@pytest.mark.browser
def test_html_report_opens_in_headless_chromium(cup_followed, tmp_path):
    from browser_checks import launch
    from playwright import sync_api

    ests = cup_followed  # the report of a run (the run's own checks: the test above)
    page_path = write_html_report(RunReport(ests, STEPS, title="cup run"), tmp_path / "report.html")
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.resolve().as_uri())
        assert page.title() == "cup run"
        widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
        assert len(widths) == 2 and min(widths) > 100  # the belief views and the latency
        assert page.locator("#no-truth").count() == 1  # a task file: no ground truth
        assert page.locator("#steps tr").count() == len(STEPS) + 1
        assert page.locator("#latency td").count() == 9
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert all(u.startswith(("file:", "data:")) for u in requests)  # self-contained


def test_latency_bars_span_their_segments(cup_followed):
    """One bar per segment from its t_start to its t_end: the axis starts at 0 s (bars centred
    on segment starts put it at -1 s), and its mm:ss labels are distinct."""
    ests = cup_followed
    fig = latency_figure(ests)
    ax = fig.axes[0]
    fig.canvas.draw()
    assert len(ax.containers) == 3  # decode, score, filter
    for bars in ax.containers:
        assert [b.get_x() for b in bars] == [e.t_start for e in ests] == [0, 2, 4, 6]
        assert [b.get_x() + b.get_width() for b in bars] == [e.t_end for e in ests]
    assert ax.get_xlim() == (0.0, 8.0)
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels == [f"00:0{i}" for i in range(9)]
    score = ax.containers[1]
    for bar, e in zip(score, ests, strict=True):  # stacked: score sits on decode
        assert bar.get_y() == pytest.approx(e.latency["decode"] * 1000)
        assert bar.get_height() == pytest.approx(e.latency["score"] * 1000)


def test_a_cup_run_with_a_task_file_is_clean(task_file, tmp_path):
    """cup.mp4, a random-init model, a task file (no ground truth). Nothing on stderr (neither
    transformers' FutureWarning nor its logger's deprecation line), and the report's caption
    describes no outlines or right/wrong strips, which are not drawn."""
    report = tmp_path / "cup.html"
    out = _cli(
        str(CLIPS / "cup.mp4"),
        "--model",
        "random-init:internvl",
        "--task",
        str(task_file),
        "--html",
        str(report),
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    page = report.read_text()
    reading = html.unescape(re.search(r'<p id="reading">(.*?)</p>', page).group(1))
    assert reading.startswith("Top: BaGLM's belief in each step over time, one line per step")
    assert "No ground truth" in reading
    for absent in ("orange outline", "annotated", "right (green)", "R@1", "darker"):
        assert absent not in reading
    assert 'id="latency-plot"' in page and 'id="latency-note"' not in page
    assert [r[0] for r in _cells(page, "latency")] == ["decode", "score", "filter"]


# --------------------------------------------------------------------------------------------
# follow --replay on the command line

ROOT = Path(__file__).resolve().parent.parent
UID = "-25-1nbOki0"  # HT-Step, K = 10, six annotated steps


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    """``python -m baglm_nb follow ARGS`` in a new process."""
    return run_cli("follow", *args, **kw)


def _run(*args: str) -> subprocess.CompletedProcess:
    """``follow ARGS`` in this process: the verb's behaviour, without a new interpreter."""
    return run_main("follow", *args)


def _announced(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "] step: " in line]


@pytest.fixture(scope="module")
def htstep_cache(tmp_path_factory):
    """A simulated HT-Step score cache of the first two videos (``UID`` first)."""
    videos = load_dataset("htstep")[:2]
    assert videos[0].uid == UID
    root = tmp_path_factory.mktemp("cache")
    return root, write_simulated_cache("htstep", root, videos=videos)


def _cells(page: str, table: str) -> list[list[str]]:
    body = re.search(f'<table id="{table}">(.*?)</table>', page, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)[1:]
    return [
        [
            html.unescape(re.sub("<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in rows
    ]


def test_replay_simulated_shows_the_ground_truth_and_the_source(tmp_path, htstep_cache):
    report, log = tmp_path / "report.html", tmp_path / "events.jsonl"
    out = _run(
        "--replay",
        "simulated",
        "--dataset",
        "htstep",
        "--html",
        str(report),
        "--jsonl",
        str(log),
        "--",
        UID,
    )
    assert out.returncode == 0, out.stderr
    assert "status: 283 segments" in out.stdout and "replay of simulated scores" in out.stdout
    _, cache = htstep_cache  # simulating on demand = replaying the written cache
    assert _announced(_run("--replay", str(cache), "--", UID).stdout) == _announced(out.stdout)

    page = report.read_text()
    video = load_dataset("htstep")[0]
    title = f"Online step grounding: {video.goal} (simulated observations, not a real model)"
    assert f"<title>{title}</title>" in page and f"<h1>{title}</h1>" in page
    assert 'class="banner simulated"' in page and "SIMULATED observations" in page
    # the truth table, from the annotation file and the event log
    events = [json.loads(x) for x in log.read_text().splitlines()]
    events = [e for e in events if e["event"] == "segment"]  # the alerts are events too
    truth = ground_truth(video, 2 * len(events))
    rows = _cells(page, "truth")
    assert len(rows) == video.num_steps == 10
    for i, (num, step, when, said, peak) in enumerate(rows):
        assert num.split()[-1] == str(i + 1) and step == video.steps[i]
        spans = [s for s in video.segments if s.step_index == i]
        announced = [e for e in events if e["current"] == video.steps[i]]
        inside = any(truth[int(e["t_start"]) : int(e["t_end"]), i].any() for e in announced)
        if spans:
            assert when.startswith(f"{int(spans[0].start // 60):02d}:")
            assert said == ("\u2713 hit" if inside else "\u2717 not announced")
            assert peak in ("\u2713 hit", "\u2717 miss")
        else:
            assert when == "not annotated" and peak == "\u2013"
            assert said == ("\u2717 announced, not annotated" if announced else "\u2013")
    assert sum(r[2] != "not annotated" for r in rows) == 6
    changes = _cells(page, "changes")
    assert [c[1] for c in changes] == [e["announced"] for e in events if e["announced"]]
    alerts_strip = 'id="alerts-timeline"' in page  # the default D (simulated LLaMA's) warns
    assert page.count("data:image/png;base64,") == 1 + alerts_strip  # no latency bars:
    assert 'id="summary"' in page
    assert 'id="latency-note"' in page and [r[0] for r in _cells(page, "latency")] == ["filter"]
    assert "orange outlines" in page  # K=10: a heatmap with the annotation outlined


def test_replay_lists_the_videos_without_a_uid(htstep_cache):
    root, cache = htstep_cache
    out = _run("--replay", str(cache))
    assert out.returncode == 0, out.stderr
    listed = [line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")]
    assert listed == [v.uid for v in load_dataset("htstep")[:2]]
    coin = _run("--replay", "simulated", "--dataset", "coin")
    lines = [line for line in coin.stdout.splitlines() if line.startswith("  ")]
    assert coin.returncode == 0 and len(lines) == len(load_dataset("coin"))
    assert lines[0].split() == ["xZecGPPhbHE", "K=3", "PutOnHairExtensions"]
    bare = _run("--replay")
    assert bare.returncode == 0
    for name in ("htstep", "crosstask", "ego4d_goalstep", "coin"):
        assert f"  {name}: " in bare.stdout
    above = _run("--replay", str(root / "scores" / "htstep"), "--", UID)  # a folder above it
    assert above.returncode == 0 and "status: 283 segments" in above.stdout


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--replay", "{tmp}/missing", "--", UID], ["{tmp}/missing", "simulate"]),
        (["--replay", "{tmp}", "--", UID], ["no score cache", "simulate", "{tmp}"]),
        (["--replay", "simulated", "--dataset", "htstep", "--", "no-such-uid"], ["no-such-uid"]),
        (["--replay", "simulated", "--", "no-such-uid"], ["no-such-uid", "--dataset"]),
        (["--replay", "{cache}", "--", "-5oTKXr5TNI"], ["-5oTKXr5TNI", "{cache}"]),
        (["--replay", "{cache}", "--dataset", "coin", "--", UID], ["htstep", "coin"]),
        (["clip.mp4", "--model", "internvl3-8b"], ["--task"]),
    ],
)
def test_bad_input_is_one_clear_line(args, names, tmp_path, htstep_cache):
    _, cache = htstep_cache
    fill = {"tmp": str(tmp_path), "cache": str(cache)}
    out = _run(*[a.format(**fill) for a in args])
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    for name in names:
        assert name.format(**fill) in lines[0]
    if "missing" in args[1]:  # --debug shows the traceback
        debug = _run("--debug", *[a.format(**fill) for a in args])
        assert debug.returncode == 2 and "Traceback" in debug.stderr


def _readme_follow_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Following a live video", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = [" ".join(c.split()) for b in blocks for c in b.replace("\\\n", " ").splitlines()]
    return [c for c in commands if c.startswith("python -m baglm_nb follow")]


def test_the_readme_follow_commands_run_as_written(tmp_path, monkeypatch):
    """Each README follow command, in a folder where ``simulate`` wrote data/cache (as
    ``make data`` does); a command that needs model weights is only parsed. The first one that
    runs is run as typed in a shell (``python -m baglm_nb`` in a new process, in that folder);
    the others run the same argv through the command line's ``main`` in this process, in that
    folder (what they do is the verb's; a new interpreter would import numpy, numba, pandas and
    matplotlib again for each)."""
    from baglm_nb.apps.cli.main import build_parser

    commands = _readme_follow_commands()
    assert len(commands) >= 3 and sum("--replay" in c for c in commands) >= 3
    # the set-up, in this process (the README's commands are what runs as written): its
    # --cache-root made absolute, where the folder's data/cache is
    prepare = ["simulate", "--dataset", "htstep", "--limit", "1"]
    made = run_main(*prepare, "--cache-root", str(tmp_path / "data" / "cache"))
    assert made.returncode == 0, made.stderr
    monkeypatch.chdir(tmp_path)  # the in-process runs' working folder, as the process's
    in_shell = True
    for command in commands:
        argv = shlex.split(command)[3:]
        args = build_parser().parse_args(argv)
        if args.model:
            continue  # needs weights
        out = _cli(*argv[1:], cwd=tmp_path) if in_shell else run_main(*argv)
        in_shell = False
        assert out.returncode == 0, f"{command}\n{out.stderr}"
        for flag in ("--html", "--jsonl"):
            if flag in argv:
                assert (tmp_path / argv[argv.index(flag) + 1]).stat().st_size > 0, command


def test_a_file_named_by_a_dataset_uid_gets_its_ground_truth(tmp_path):
    """``--model`` on a file named ``<uid>.mp4`` with ``--dataset``: the annotation is the task
    and the report shows its ground truth (a tiny random model scores the clip)."""
    video = load_dataset("coin")[0]
    clip = tmp_path / f"{video.uid}.mp4"
    clip.symlink_to(CLIPS / "cup.mp4")
    report = tmp_path / "report.html"
    # in this process (the verb's behaviour; a real process's clean stderr with --model is
    # test_a_cup_run_with_a_task_file_is_clean's subject): no second interpreter importing
    # torch, transformers and the tiny model again
    argv = ["--model", "random-init:internvl", "--dataset", "coin", "--html", str(report)]
    out = run_main("follow", str(clip), *argv, show_warnings=True)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no library warning shown, as a process would show it
    assert f"goal: {video.goal}" in out.stdout and "status: 4 segments" in out.stdout
    page = report.read_text()
    # the clip's 8 s end before the video's first annotated step (00:25): nothing is shaded
    reading = re.search(r'<p id="reading">(.*?)</p>', page).group(1)
    assert "no step is annotated inside the drawn span" in reading
    assert "right (green)" in reading and "shaded spans" not in reading and "R@1" not in reading
    assert "(observations: lmm:random-init:internvl)" in page and "RANDOMLY INITIALISED" in page
    rows = _cells(page, "truth")
    assert [r[1] for r in rows] == list(video.steps)
    assert f"followed: coin video {video.uid}" in page


# --------------------------------------------------------------------------------------------
# follow on broken, empty or unreadable sources: checked before the model loads,
# never exit 0 without a segment, one line of user text


def _main(capsys, *args: str) -> tuple[int, str, str]:
    from baglm_nb.apps.cli.main import main

    code = main(["follow", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def task_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("task") / "task.json"
    path.write_text(json.dumps({"goal": "handle a cup", "steps": STEPS}))
    return path


@pytest.mark.parametrize("case", ["missing", "empty", "short", "moov-at-end", "moov-growing"])
def test_a_source_that_cannot_be_followed_is_refused_before_the_model_loads(
    case, task_file, tmp_path, capsys
):
    path, extra = tmp_path / "video.mp4", []
    if case == "empty":
        path.write_bytes(b"")
    elif case == "short":  # 1 s: no whole 2-s segment
        ffmpeg("-i", str(CLIPS / "cup.mp4"), "-t", "1", "-an", "-c:v", "copy", str(path))
    elif case.startswith("moov"):  # FFmpeg writes the index at the end; cut before it
        ffmpeg("-i", str(CLIPS / "cup.mp4"), "-an", "-c:v", "copy", str(tmp_path / "f.mp4"))
        data = (tmp_path / "f.mp4").read_bytes()
        assert data.rfind(b"moov") > data.find(b"mdat") > 0
        path.write_bytes(data[: len(data) // 2])
        extra = ["--growing"] if case == "moov-growing" else []
    # a model id that cannot load: the source must be refused first
    code, out, err = _main(
        capsys, str(path), "--task", str(task_file), "--model", "no-such-model", *extra
    )
    line = one_error_line(err)
    assert code == 2 and str(path) in line and out == ""
    expected = {
        "missing": "no such video file",
        "empty": "cannot open as a video",
        "short": "shorter than one 2-s segment",
        "moov-at-end": "(moov atom) comes at its end cannot be read (it is cut short",
        "moov-growing": "(moov atom) comes at its end cannot be read while it is written",
    }[case]
    assert expected in line
    if case.startswith("moov"):
        assert "MPEG-TS" in line and "fragmented MP4" in line
    if case == "empty":
        code, _, err = _main(capsys, str(path), "--task", str(task_file), "--model", "m", "--debug")
        assert code == 2 and "Traceback (most recent call last)" in err


def test_a_source_that_breaks_mid_run_exits_1_with_its_last_decode_error(tmp_path, capsys):
    """cup.mp4 with the second half of its media data overwritten: one segment decodes, then
    frame 100 does not. The run ends with exit 1 and the decoder's error, after the event log
    and the report are written; a goal of many lines is echoed as one short line."""
    data = bytearray((CLIPS / "cup.mp4").read_bytes())
    start = data.find(b"mdat") + 4
    cut = start + (len(data) - start) // 2
    data[cut:] = np.random.default_rng(0).integers(0, 256, len(data) - cut, np.uint8).tobytes()
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(bytes(data))
    goal = "handle a cup\n" + "and then do many more things " * 50
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"goal": goal, "steps": STEPS}))
    log, report = tmp_path / "events.jsonl", tmp_path / "report.html"
    args = ["--model", "random-init:internvl", "--jsonl", str(log), "--html", str(report)]
    code, out, err = _main(capsys, str(broken), "--task", str(task), *args)
    line = one_error_line(err)
    assert code == 1 and "source broke after 1 segments" in line and str(broken) in line
    assert "frame 100 at 3.735 s cannot be decoded" in line
    assert len(log.read_text().splitlines()) == 1 and "frame 100" in report.read_text()
    first = out.splitlines()[0]
    assert first.startswith("following ") and "and then do many" in first
    echoed = first.split("goal: ", 1)[1]
    assert len(echoed) <= 80 and echoed.endswith("\u2026")
    assert not any("more things" in x for x in out.splitlines()[1:])  # one line of the goal


#: Whole segments in :func:`box_mp4`.
BOX_SEGMENTS = 3


@pytest.fixture(scope="module")
def box_mp4(tmp_path_factory) -> Path:
    """box.mp4's first 6.1 s, cut by stream copy (its own frames, B frames and timestamps):
    3 whole segments where the whole clip has 7. Its MPEG-TS remux is the same kind of file
    (torchcodec reports no usable rate or duration, so it is followed on its frames' own
    timestamps, from 1.4 s), followed on the same paths at less than half the frames to decode
    and the segments to score."""
    path = tmp_path_factory.mktemp("box") / "box-6s.mp4"
    ffmpeg("-i", str(CLIPS / "box.mp4"), "-t", "6.1", "-an", "-c:v", "copy", str(path))
    return path


@pytest.fixture(scope="module")
def box_ts(tmp_path_factory, box_mp4) -> Path:
    """``ffmpeg -i box.mp4 -c:v copy -f mpegts box.ts`` (of :func:`box_mp4`): torchcodec reports
    4.5e-12 fps."""
    path = tmp_path_factory.mktemp("ts") / "box.ts"
    ffmpeg("-i", str(box_mp4), "-c:v", "copy", "-f", "mpegts", str(path))
    assert probe(path).timing == "frames"  # the remux's own kind: followed on its timestamps
    return path


@pytest.fixture(scope="module")
def box_on_its_timestamps(scorer, box_mp4):
    """:func:`box_mp4` followed on its frames' own timestamps (read as a live source, queued)."""
    return list(follow(box_mp4, grounder(scorer), live=True, lag="queue"))


def test_an_mpegts_remux_is_followed_like_its_mp4(scorer, box_mp4, box_ts, box_on_its_timestamps):
    ends: list[str] = []
    ests = list(follow(box_ts, grounder(scorer), on_end=ends.append))
    n = BOX_SEGMENTS
    assert [e.segment for e in ests] == list(range(n)) == [e.segment for e in box_on_its_timestamps]
    mp4 = probe(box_mp4)
    assert num_segments(mp4.num_frames, mp4.fps) == n  # the published grid's count too
    np.testing.assert_array_equal(
        [e.belief for e in ests], [e.belief for e in box_on_its_timestamps]
    )
    assert ends == [f"source ended after {n} segments"]


def test_a_growing_mpegts_remux_is_followed_like_its_mp4(
    scorer, box_ts, box_on_its_timestamps, tmp_path
):
    data = box_ts.read_bytes()
    live = tmp_path / "live.ts"
    live.write_bytes(data[: len(data) // 3])

    def record():  # the rest in two parts, cut inside packets
        for part in (data[len(data) // 3 : 2 * len(data) // 3], data[2 * len(data) // 3 :]):
            time.sleep(0.7)
            with open(live, "ab") as f:
                f.write(part)

    # longer than the pauses on a busy machine (the stall after the last frame is the test's
    # wait, so it is kept short)
    timeout = round(1.8 * machine_stretch(), 1)
    threading.Thread(target=record, daemon=True).start()
    ends: list[str] = []
    ests = list(
        follow(live, grounder(scorer), growing=True, timeout=timeout, poll=0.3, on_end=ends.append)
    )
    assert [e.segment for e in ests] == list(range(BOX_SEGMENTS))
    np.testing.assert_array_equal(
        [e.belief for e in ests], [e.belief for e in box_on_its_timestamps]
    )
    assert ends and ends[0].startswith(f"no new frames for {timeout:g} s") and not ends[0].failed


def test_replay_of_a_named_twin():
    """``--replay simulated:<twin>`` replays that twin's scores and says which; a bad twin is
    refused in one line."""
    from baglm_nb.core.simulate import DEFAULT_TWIN, TWINS

    out = {t: _run("--replay", f"simulated:{t}", "--dataset", "htstep", "--", UID) for t in TWINS}
    for twin, run in out.items():
        assert run.returncode == 0, run.stderr
        assert f"replay of simulated:{twin} scores" in run.stdout
    default = _run("--replay", "simulated", "--dataset", "htstep", "--", UID)
    assert _announced(default.stdout) == _announced(out[DEFAULT_TWIN].stdout)
    bad = _run("--replay", "simulated:sticky", "--dataset", "htstep", "--", UID)
    assert bad.returncode == 2 and "error: scores 'simulated:sticky'" in bad.stderr
