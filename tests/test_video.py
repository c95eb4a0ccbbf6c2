"""Decoding and segmenting (reference-protocol §1) on real clips from tests/data/videos."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import baglm_nb.inputs.video as video
from baglm_nb.inputs.datasets import DATASETS, load_dataset
from baglm_nb.inputs.grid import frame_indices, num_segments, segment_frame_indices
from baglm_nb.inputs.video import (
    SegmentBatch,
    VideoError,
    VideoInfo,
    iter_segments,
    probe,
)

VIDEOS = Path(__file__).parent / "data" / "videos"
CUP, BOX, MEGAMIND = VIDEOS / "cup.mp4", VIDEOS / "box.mp4", VIDEOS / "Megamind_bugy.avi"
FFMPEG = shutil.which("ffmpeg")


def _all(path, **kwargs) -> list[SegmentBatch]:
    return list(iter_segments(path, **kwargs))


def _frames(batches: list[SegmentBatch]) -> torch.Tensor:
    return torch.cat([b.frames for b in batches])


@pytest.fixture(scope="module")
def cup_batches() -> list[SegmentBatch]:
    return _all(CUP)


# --- probe --------------------------------------------------------------------------------------

# Checked by hand against ffprobe (stream=nb_frames,avg_frame_rate,duration and -count_frames):
# cup.mp4 217 frames, 26777/1000 fps, 8.10397 s; box.mp4 456 frames in the header but 455
# decodable (ffprobe -count_frames: 455), 15.184 s; Megamind_bugy.avi 270 frames, 30 fps, 9 s.
PROBES = {
    "cup.mp4": (217, 26.777, 8.10397, 640, 480, "h264"),
    "box.mp4": (455, 455 / 15.184, 15.184, 640, 480, "h264"),
    "Megamind_bugy.avi": (270, 30.0, 9.0, 720, 528, "mpeg4"),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_values(name):
    frames, fps, duration, width, height, codec = PROBES[name]
    info = probe(VIDEOS / name)
    assert isinstance(info, VideoInfo)
    assert info.path == VIDEOS / name
    assert info.num_frames == frames
    assert info.fps == pytest.approx(fps, rel=1e-6)
    assert info.duration_s == pytest.approx(duration, abs=1e-4)
    assert info.num_frames / info.fps == pytest.approx(info.duration_s, abs=1e-4)
    assert (info.width, info.height, info.codec) == (width, height, codec)
    with pytest.raises(AttributeError):
        info.fps = 1.0  # frozen


# --- the published sampling rule ---------------------------------------------------------------


def test_frame_indices_reference_example():
    # reference-protocol §1.2: HT-Step -25-1nbOki0
    f, fps = 16988, 30.0000353
    idx = frame_indices(f, fps)
    assert idx.dtype == np.int64
    assert len(idx) == 1132
    assert idx[:4].tolist() == [0, 15, 30, 45]
    assert idx[-1] == 16987
    np.testing.assert_array_equal(idx, np.linspace(0, f - 1, int(f * (2.0 / fps))).astype(int))
    seg = segment_frame_indices(f, fps)
    assert seg.shape == (1132 // 4, 4)
    np.testing.assert_allclose(seg[0] / fps, [0.0, 0.5, 1.0, 1.5], atol=0.005)
    np.testing.assert_allclose(seg[282] / fps, [564.70, 565.20, 565.70, 566.23], atol=0.005)


def test_frame_indices_small_and_invalid():
    assert frame_indices(10, 30.0).shape == (0,)  # int(10 * 2/30) = 0 samples
    assert segment_frame_indices(10, 30.0).shape == (0, 4)
    assert segment_frame_indices(90, 30.0).shape == (1, 4)  # 6 samples, partial group dropped
    assert segment_frame_indices(300, 30.0, segment_duration=1, sampling_fps=4).shape == (10, 4)
    with pytest.raises(ValueError):
        frame_indices(10, 0.0)
    with pytest.raises(ValueError):
        frame_indices(-1, 30.0)
    with pytest.raises(ValueError):
        segment_frame_indices(100, 30.0, segment_duration=0.2, sampling_fps=2.0)


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_segment_counts_equal_datasets_num_segments(name):
    videos = load_dataset(name)
    assert videos
    for v in videos:
        seg = segment_frame_indices(v.num_frames, v.fps)
        assert seg.shape == (num_segments(v.num_frames, v.fps), 4), v.uid
        if seg.size:
            assert seg[0, 0] == 0 and seg.max() <= v.num_frames - 1, v.uid
            assert np.all(np.diff(seg.reshape(-1)) > 0), v.uid


# --- streaming decode --------------------------------------------------------------------------


def test_iter_segments_cup(cup_batches):
    from torchcodec.decoders import VideoDecoder

    info = probe(CUP)
    s = num_segments(info.num_frames, info.fps)
    assert s == 4
    assert len(cup_batches) == 1
    (b,) = cup_batches
    assert b.first_segment == 0 and b.num_segments == s and b.segment_indices == range(s)
    assert b.frames.shape == (s, 4, 3, 480, 640)
    assert b.frames.dtype == torch.uint8 and b.frames.device.type == "cpu"
    assert b.times.shape == (s, 4) and b.times.dtype == torch.float64
    torch.testing.assert_close(b.t_start, torch.arange(s, dtype=torch.float64) * 2)
    torch.testing.assert_close(b.t_end, b.t_start + 2)
    assert b.decode_s > 0
    idx = segment_frame_indices(info.num_frames, info.fps)
    # cup.mp4 has clean timestamps: each frame's pts is its index / fps
    np.testing.assert_allclose(b.times.numpy(), idx / info.fps, atol=1e-3)
    direct = VideoDecoder(str(CUP), seek_mode="exact").get_frames_at(indices=idx.ravel().tolist())
    assert torch.equal(b.frames.reshape(-1, 3, 480, 640), direct.data)
    torch.testing.assert_close(b.times.reshape(-1), direct.pts_seconds.double())


def test_batch_size_does_not_change_frames(cup_batches):
    one = _all(CUP, batch_segments=1)
    assert [b.first_segment for b in one] == [0, 1, 2, 3]
    assert all(b.frames.shape == (1, 4, 3, 480, 640) for b in one)
    assert torch.equal(_frames(one), _frames(cup_batches))
    three = _all(CUP, batch_segments=3)
    assert [b.num_segments for b in three] == [3, 1]
    assert torch.equal(_frames(three), _frames(cup_batches))
    assert torch.equal(torch.cat([b.t_start for b in three]), cup_batches[0].t_start)


def test_start_segment_resumes(cup_batches):
    rest = _all(CUP, start_segment=2, batch_segments=1)
    assert [b.first_segment for b in rest] == [2, 3]
    assert [float(b.t_start[0]) for b in rest] == [4.0, 6.0]
    assert torch.equal(_frames(rest), cup_batches[0].frames[2:])
    torch.testing.assert_close(torch.cat([b.times for b in rest]), cup_batches[0].times[2:])
    assert _all(CUP, start_segment=4) == []
    assert _all(CUP, start_segment=50) == []  # past the end: nothing yet (growing files)
    with pytest.raises(ValueError, match="start_segment"):
        iter_segments(CUP, start_segment=-1)


def test_bad_arguments():
    with pytest.raises(ValueError, match="batch_segments"):
        iter_segments(CUP, batch_segments=0)
    with pytest.raises(ValueError, match="device"):
        iter_segments(CUP, device="meta")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            iter_segments(CUP, device="cuda")


@pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg command: apt-get install -y ffmpeg")
def test_cuda_falls_back_to_cpu_for_vp9(tmp_path, monkeypatch):
    clip = tmp_path / "tiny_vp9.webm"
    subprocess.run(
        [
            FFMPEG,
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=64x48:rate=10",
            "-t",
            "2",
            "-c:v",
            "libvpx-vp9",
            "-deadline",
            "realtime",
            str(clip),
        ],
        check=True,
    )
    assert probe(clip).codec == "vp9"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.warns(RuntimeWarning, match="vp9.*CPU"):
        batches = _all(clip, device="cuda")
    assert [b.frames.device.type for b in batches] == ["cpu"]
    assert batches[0].frames.shape == (1, 4, 3, 48, 64)


# --- damaged clips: what actually happens ------------------------------------------------------


def test_box_damaged_slice_header_decodes_fully():
    """box.mp4: ffmpeg warns about a damaged slice header, but every frame decodes.

    Its container stores decode-order times as presentation times (B-frames), so the file's own
    pts are not monotonic. torchcodec maps a frame index through those times: the picture at a
    sampled index can be up to 2 frames earlier than its display position, but the mapping is
    reproducible (batched and frame-by-frame access agree), and the time grid is not shifted.
    """
    from torchcodec.decoders import VideoDecoder

    info = probe(BOX)  # 456 frames declared, 455 present: within the truncation tolerance
    s = num_segments(info.num_frames, info.fps)
    batches = _all(BOX, batch_segments=3)
    assert [b.first_segment for b in batches] == [0, 3, 6]
    frames = _frames(batches)
    assert frames.shape == (s, 4, 3, 480, 640) and s == 7
    idx = segment_frame_indices(info.num_frames, info.fps)
    times = torch.cat([b.times for b in batches]).numpy()
    assert np.all(np.abs(times - idx / info.fps) <= 3 / info.fps)
    dec = VideoDecoder(str(BOX), seek_mode="exact")
    single = torch.stack([dec.get_frame_at(int(i)).data for i in idx.ravel()])
    assert torch.equal(frames.reshape(-1, 3, 480, 640), single)
    raw_pts = VideoDecoder(str(BOX), seek_mode="exact").get_frames_at(list(range(8))).pts_seconds
    assert not bool(torch.all(raw_pts.diff() > 0))  # the file's own times are out of order


def test_megamind_last_frame_recovered_not_skipped(monkeypatch):
    """Megamind_bugy.avi at its full frame rate (every frame sampled).

    Decoding all 270 frames in one pass fails on the last one; the per-frame retry decodes it
    from a fresh seek, so no frame is skipped. torchcodec's index i of this file shows the
    picture at pts (i + 1) / 30, and the last index repeats the last picture (same pts).
    """
    from torchcodec.decoders import VideoDecoder

    failures = []

    class SpyDecoder(VideoDecoder):
        def get_frames_at(self, indices):
            try:
                return super().get_frames_at(indices)
            except RuntimeError as exc:
                failures.append((len(indices), str(exc)))
                raise

    monkeypatch.setattr(video, "VideoDecoder", SpyDecoder)
    batches = _all(MEGAMIND, segment_duration=1, sampling_fps=30.0, batch_segments=16)
    assert len(failures) == 1 and failures[0][0] == 270  # the one-pass batch call failed
    assert len(batches) == 1 and batches[0].frames.shape == (9, 30, 3, 528, 720)
    times = batches[0].times.reshape(-1).numpy()
    np.testing.assert_allclose(times[:269], (np.arange(269) + 1) / 30, atol=1e-6)
    assert times[269] == times[268]
    # at the default 2 fps the last frame is not sampled and the batch call succeeds
    assert _frames(_all(MEGAMIND)).shape == (4, 4, 3, 528, 720)


def test_undecodable_frame_names_file_and_time(monkeypatch):
    from torchcodec.decoders import VideoDecoder

    bad = int(segment_frame_indices(217, 26.777)[2, 1])  # a frame of segment 2

    class FlakyDecoder(VideoDecoder):
        def get_frames_at(self, indices):
            if bad in list(indices):
                raise RuntimeError("simulated decode failure")
            return super().get_frames_at(indices)

        def get_frame_at(self, index):
            if index == bad:
                raise RuntimeError("simulated decode failure")
            return super().get_frame_at(index)

    monkeypatch.setattr(video, "VideoDecoder", FlakyDecoder)
    batches = iter_segments(CUP, batch_segments=1)
    assert next(batches).first_segment == 0
    assert next(batches).first_segment == 1
    with pytest.raises(VideoError) as err:
        next(batches)
    t = bad / 26.777
    assert "cup.mp4" in str(err.value) and f"{t:.3f} s" in str(err.value)
    assert err.value.time_s == pytest.approx(t) and err.value.path == CUP


# --- files that are not (whole) videos ---------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.mp4"
    for call in (probe, iter_segments):
        with pytest.raises(VideoError, match="not found") as err:
            call(missing)
        assert "nope.mp4" in str(err.value)


def test_text_file_renamed_mp4(tmp_path):
    fake = tmp_path / "notes.mp4"
    fake.write_text("this is not a video\n")
    for call in (probe, iter_segments):
        with pytest.raises(VideoError) as err:
            call(fake)
        assert "notes.mp4" in str(err.value)
    assert issubclass(VideoError, RuntimeError)


def test_truncated_copy(tmp_path):
    data = CUP.read_bytes()
    cut = tmp_path / "cup_half.mp4"
    cut.write_bytes(data[: len(data) // 2])
    for call in (probe, iter_segments):
        with pytest.raises(VideoError, match="truncated") as err:
            call(cut)
        assert "cup_half.mp4" in str(err.value)
    # opting in gives the readable part: 94 of 217 frames
    info = probe(cut, allow_truncated=True)
    assert info.num_frames == 94
    batches = _all(cut, allow_truncated=True)
    assert _frames(batches).shape == (num_segments(94, info.fps), 4, 3, 480, 640)


@pytest.mark.skipif(FFMPEG is None, reason="needs the ffmpeg command: apt-get install -y ffmpeg")
def test_audio_only_file(tmp_path):
    audio = tmp_path / "tone.m4a"
    subprocess.run([FFMPEG, "-v", "error", "-f", "lavfi", "-i", "sine=d=1", str(audio)], check=True)
    for call in (probe, iter_segments):
        with pytest.raises(VideoError, match="no video stream") as err:
            call(audio)
        assert "tone.m4a" in str(err.value)


def test_no_warnings_on_clean_clip():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert probe(CUP).num_frames == 217
