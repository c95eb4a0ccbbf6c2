"""Short test clips cut from ``tests/data/videos/cup.mp4`` and a COIN-format annotation for them.

Used by the served-scorer tests, where every segment costs server requests: each clip is a few
seconds at 10 fps, scaled down (``ffmpeg`` is needed, as for the video tests). Also the ``score``
command line over the real test clips (:func:`score_argv`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CLIPS = Path(__file__).parent / "data" / "videos"
CUP = CLIPS / "cup.mp4"
FPS = 10


def score_argv(
    annotations: Path, cache_root: Path, *extra: str, model: str = "random-init:internvl"
) -> list[str]:
    """``score`` of COIN over the real test clips, with its annotation file and cache root."""
    return ["score", "--dataset", "coin", "--video-dir", str(CLIPS), "--model", model,
            "--annotations", str(annotations), "--cache-root", str(cache_root), *extra]  # fmt: skip


#: The clips cut in this process, by (start, seconds, size), copied for each later call: the
#: tests ask for the same few cuts over and over, and each cut is an ffmpeg process.
_CUT: dict[tuple[float, float, str], Path] = {}
_CUT_DIR: tempfile.TemporaryDirectory | None = None


def _cut(start_s: float, seconds: float, size: str) -> Path:
    """The clip of cup.mp4 from ``start_s``, ``seconds`` long, scaled to ``size`` (cut once per
    process by ffmpeg into a temporary folder removed at exit)."""
    global _CUT_DIR
    key = (start_s, seconds, size)
    if key not in _CUT:
        if _CUT_DIR is None:
            _CUT_DIR = tempfile.TemporaryDirectory(prefix="baglm-test-clips-")
        out = Path(_CUT_DIR.name) / f"{len(_CUT)}.mp4"
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-ss", str(start_s), "-i", str(CUP), "-t",
             str(seconds), "-vf", f"scale={size},fps={FPS}", "-an", str(out)],
            check=True,
        )  # fmt: skip
        _CUT[key] = out
    return _CUT[key]


def short_clips(folder: Path, uids: list[str], seconds: float, size: str = "48:36") -> Path:
    """One clip per uid (starting 1.5 s apart in cup.mp4), ``seconds`` long at 10 fps (each
    file a copy of the process's one cut of it: :func:`_cut`)."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("needs the ffmpeg command: apt-get install -y ffmpeg")
    folder.mkdir(parents=True, exist_ok=True)
    for n, uid in enumerate(uids):
        shutil.copyfile(_cut(1.5 * n, seconds, size), folder / f"{uid}.mp4")
    return folder


def coin_annotations(folder: Path, uids: list[str], steps: list[str], seconds: float) -> Path:
    """A COIN annotation file for the clips (task "Tea" with ``steps``); returns its folder."""
    folder.mkdir(parents=True, exist_ok=True)
    records = [
        {
            "video_uid": uid,
            "video_num_frames": int(seconds * FPS),
            "video_fps": float(FPS),
            "activity": "Tea",
            "step_headline": steps,
            "clips": [
                {
                    "annotations": [
                        {
                            "language_queries": [
                                {"clip_start_sec": 0.5, "clip_end_sec": 1.5, "query": steps[0]}
                            ]
                        }
                    ]
                }
            ],
        }
        for uid in uids
    ]
    (folder / "coin_video_annots.json").write_text(json.dumps(records))
    return folder
