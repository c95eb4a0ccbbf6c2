"""follow(): real clips through a tiny random-init scorer, a growing file, a URL, a broken file,
and the HTML report opened in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from range_server import serve

from baglm_nb.apps.online import OnlineGrounder, follow
from baglm_nb.apps.online_report import write_html_report
from baglm_nb.inputs.grid import num_segments
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


def expected_segments(path) -> int:
    info = probe(path)
    return num_segments(info.num_frames, info.fps)


def test_follow_a_file_scores_every_segment(scorer):
    ends: list[str] = []
    ests = list(follow(CLIPS / "cup.mp4", grounder(scorer), on_end=ends.append))
    n = expected_segments(CLIPS / "cup.mp4")
    assert [e.segment for e in ests] == list(range(n)) and n == 4
    assert ends == [f"source ended after {n} segments"]
    for e in ests:
        assert e.belief.sum() == pytest.approx(1.0) and e.latency["score"] > 0
        assert e.latency["decode"] > 0 and e.latency["filter"] < 0.5
    # the same frames pushed by hand give the same beliefs
    from baglm_nb.inputs.video import iter_segments

    g = grounder(scorer)
    frames = [f for b in iter_segments(CLIPS / "cup.mp4", batch_segments=1) for f in b.frames]
    by_hand = [g.push(f).belief for f in frames]
    np.testing.assert_allclose(np.stack(by_hand), np.stack([e.belief for e in ests]), atol=1e-9)


def test_follow_a_growing_file(scorer, tmp_path):
    full = tmp_path / "full.ts"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(CLIPS / "cup.mp4"), "-an",
                    "-c:v", "copy", "-f", "mpegts", str(full)], check=True)  # fmt: skip
    data = full.read_bytes()
    live = tmp_path / "live.ts"
    live.write_bytes(data[: len(data) // 3])

    def record():
        time.sleep(1.5)
        with open(live, "ab") as f:
            f.write(data[len(data) // 3 :])

    threading.Thread(target=record, daemon=True).start()
    ends: list[str] = []
    ests = list(follow(live, grounder(scorer), growing=True, timeout=4.0, poll=0.3,
                       on_end=ends.append))  # fmt: skip
    assert [e.segment for e in ests] == list(range(expected_segments(full)))
    assert ends and ends[0].startswith("no new frames for 4 s")


def test_follow_a_url(scorer):
    with serve(CLIPS) as base:
        ests = list(follow(f"{base}/cup.mp4", grounder(scorer)))
    local = list(follow(CLIPS / "cup.mp4", grounder(scorer)))
    np.testing.assert_allclose([e.belief for e in ests], [e.belief for e in local], atol=1e-9)


def test_a_broken_source_stops_with_a_clear_message(scorer, tmp_path):
    broken = tmp_path / "broken.mp4"
    data = (CLIPS / "cup.mp4").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    ends: list[str] = []
    assert list(follow(broken, grounder(scorer), on_end=ends.append)) == []
    assert "source broke after 0 segments" in ends[0] and "broken.mp4" in ends[0]


@pytest.mark.browser
def test_html_report_opens_in_headless_chromium(scorer, tmp_path):
    from playwright import sync_api

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "Debian's chromium is not installed: apt-get install -y chromium (or make setup)"
        )
    ests = list(follow(CLIPS / "cup.mp4", grounder(scorer)))
    page_path = write_html_report(ests, STEPS, tmp_path / "report.html", title="cup run")
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=args)
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.resolve().as_uri())
        assert page.title() == "cup run"
        widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
        assert len(widths) == 3 and min(widths) > 100
        assert page.locator("#latency td").count() == 9
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert all(u.startswith(("file:", "data:")) for u in requests)  # self-contained
