"""Decode speed and memory of :mod:`baglm_nb.inputs.video` (goals: >= 50x real time, < 1.5 GiB RSS).

Three measurements, all at the published grid (2 fps, 4 frames per 2 s segment):

1. **Speed** on the real 640x480 clips ``tests/data/videos/cup.mp4`` and ``box.mp4``: whole
   :func:`baglm_nb.inputs.video.iter_segments` runs (open + content scan + decode), best of
   ``--repeats``, printed as segments per second and as the multiple of real time (video seconds
   per wall second). When :func:`baglm_nb.models.families.internvl.preprocess_internvl`
   exists, decode plus InternVL preprocessing (448x448 squash + normalisation, one segment at
   a time) is timed too, with the module's numba kernel (:mod:`baglm_nb.models.resample`, the
   CPU default) and with torch's float kernel (the reference path, the baseline).
2. **Strategy**: the module's indexed decoding (``get_frames_at`` on the sampled indices; the
   decoder skips colour conversion of the frames in between and seeks only across GOPs) against
   sequential decoding (every frame decoded and converted, in bounded chunks, the needed ones
   kept), on the clips and on the first ``--compare-seconds`` of the long video.
3. **Long video / memory**: a synthetic ``--long-seconds`` (default 1800 = 30 min) 1280x720
   30 fps h264 video (ffmpeg ``testsrc2``, ``-preset ultrafast -g 60``, cached under
   ``$TMPDIR/baglm_decode_bench/`` keyed by its parameters) is streamed through
   ``iter_segments`` in a **subprocess**, which reports its own peak RSS (``ru_maxrss``), so
   neither the generation nor this process counts.

    .venv/bin/python benchmarks/decode_speed.py [--threads 2] [--repeats 3] [--skip-long]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torchcodec.decoders import VideoDecoder

from baglm_nb.inputs.grid import segment_frame_indices
from baglm_nb.inputs.video import iter_segments, probe

ROOT = Path(__file__).resolve().parent.parent
CLIPS = [ROOT / "tests" / "data" / "videos" / name for name in ("cup.mp4", "box.mp4")]
GOAL_X_REALTIME = 50.0
GOAL_RSS_GIB = 1.5
SEGMENT_DURATION, SAMPLING_FPS = 2, 2.0


def torch_reference_preprocess(frames: torch.Tensor) -> torch.Tensor:
    """The same InternVL preprocessing with torch's float kernel (the faithful reference path)."""
    from baglm_nb.models.families.internvl import IMAGENET_MEAN, IMAGENET_STD
    from baglm_nb.models.preprocess import _normalize, resize_uint8

    x = resize_uint8(frames, (448, 448)).float().div_(255.0)
    return _normalize(x, IMAGENET_MEAN, IMAGENET_STD)


def kernel_agreement(prep: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """How far ``prep`` (the module's kernel) is from the torch reference, in uint8 levels."""
    from baglm_nb.models.families.internvl import IMAGENET_STD

    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    worst, differing, total = 0.0, 0, 0
    for clip in CLIPS:
        for batch in iter_segments(clip, batch_segments=16):
            for segment in batch.frames:
                levels = ((prep(segment) - torch_reference_preprocess(segment)) * std * 255).abs()
                worst = max(worst, float(levels.max()))
                differing += int((levels > 1e-3).sum())
                total += levels.numel()
    return (
        f"max {worst:.2f} uint8 levels; {differing} of {total:,} values differ "
        f"({differing / total * 1e6:.1f} per million)"
    )


def load_preprocess() -> Callable[[torch.Tensor], torch.Tensor] | None:
    """InternVL's preprocessing (its family spec's) when it exists, else None."""
    try:
        from baglm_nb.models.families.internvl import preprocess_internvl
    except ImportError:
        return None
    return preprocess_internvl


# --- the two decoding strategies -----------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads, FFmpeg's included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_indexed(
    path: Path,
    threads: int,
    batch_segments: int,
    limit: int | None = None,
    preprocess: Callable | None = None,
    keep: bool = False,
    on_batch: Callable[[], object] | None = None,
) -> dict:
    """The module's way: :func:`iter_segments` (``get_frames_at`` on the sampled indices)."""
    t0, c0 = time.perf_counter(), cpu_seconds()
    segments = decode_s = prep_s = 0.0
    kept = []
    for batch in iter_segments(path, batch_segments=batch_segments, num_threads=threads):
        frames = batch.frames
        if limit is not None and segments + len(frames) > limit:
            frames = frames[: limit - int(segments)]
        decode_s += batch.decode_s
        if preprocess is not None:
            t = time.perf_counter()
            for segment in frames:  # one (4, 3, H, W) segment at a time, as the model sees them
                preprocess(segment)
            prep_s += time.perf_counter() - t
        if keep:
            kept.append(frames)
        segments += len(frames)
        if on_batch is not None:
            on_batch()
        if limit is not None and segments >= limit:
            break
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    out = {"segments": int(segments), "wall_s": wall, "cpu_s": cpu, "decode_s": decode_s}
    out["prep_s"] = prep_s
    if keep:
        out["frames"] = torch.cat(kept)
    return out


def run_sequential(
    path: Path,
    threads: int,
    batch_segments: int,
    limit: int | None = None,
    chunk: int = 32,
    keep: bool = False,
) -> dict:
    """The alternative: decode every frame in order (chunks of ``chunk``), keep the sampled ones.

    Memory stays bounded by one chunk plus one batch of kept frames.
    """
    t0, c0 = time.perf_counter(), cpu_seconds()
    info = probe(path)
    decoder = VideoDecoder(str(path), seek_mode="exact", num_ffmpeg_threads=threads)
    grid = segment_frame_indices(info.num_frames, info.fps, SEGMENT_DURATION, SAMPLING_FPS)
    if limit is not None:
        grid = grid[:limit]
    decode_s, kept, position = 0.0, [], 0
    for first in range(0, len(grid), batch_segments):
        block = grid[first : first + batch_segments]
        t = time.perf_counter()
        wanted, picked = block.reshape(-1).tolist(), []
        w = 0
        while w < len(wanted):
            stop = min(max(position, wanted[w]) + chunk, info.num_frames)
            stop = max(stop, position + 1)
            frames = decoder.get_frames_in_range(position, stop).data
            while w < len(wanted) and wanted[w] < stop:
                picked.append(frames[wanted[w] - position])
                w += 1
            position = stop
        data = torch.stack(picked).reshape(*block.shape, *picked[0].shape)
        decode_s += time.perf_counter() - t
        if keep:
            kept.append(data)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    out = {"segments": len(grid), "wall_s": wall, "cpu_s": cpu, "decode_s": decode_s}
    out["prep_s"] = 0.0
    if keep:
        out["frames"] = torch.cat(kept)
    return out


def best_of(repeats: int, fn: Callable[[], dict]) -> dict:
    """The run with the smallest wall time out of ``repeats``."""
    return min((fn() for _ in range(repeats)), key=lambda r: r["wall_s"])


def line(label: str, r: dict, video_s: float) -> str:
    """One result line: segments/s and x real time (video seconds per wall second).

    Also the video seconds per CPU second (all threads): the speed on one free core, which a
    shared machine does not distort.
    """
    x = video_s / r["wall_s"]
    return (
        f"  {label:<31} {r['segments']:>4} seg {r['wall_s']:7.2f} s "
        f"{r['segments'] / r['wall_s']:7.1f} seg/s {x:6.1f}x real time "
        f"({x / GOAL_X_REALTIME:.2f} of goal) | CPU {r['cpu_s']:6.2f} s, "
        f"{video_s / r['cpu_s']:5.1f}x per CPU-s"
    )


# --- long synthetic video and the memory subprocess ----------------------------------------------


def long_video(seconds: int, size: str = "1280x720", rate: int = 30, gop: int = 60) -> Path:
    """A cached synthetic h264 video (ffmpeg testsrc2), generated on first use."""
    folder = Path(tempfile.gettempdir()) / "baglm_decode_bench"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"testsrc2_{size}_r{rate}_t{seconds}_g{gop}_ultrafast.mp4"
    if path.exists():
        return path
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise SystemExit("ffmpeg is needed to generate the long test video")
    part = path.with_name(path.name + f".{os.getpid()}.part")
    print(f"generating {path.name} ({seconds} s of {size} at {rate} fps; takes a few minutes)")
    t0 = time.perf_counter()
    cmd = [
        ffmpeg,
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size={size}:rate={rate}",
        "-t",
        str(seconds),
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-g",
        str(gop),
        "-pix_fmt",
        "yuv420p",
        "-f",
        "mp4",
        str(part),
    ]
    subprocess.run(cmd, check=True)
    part.replace(path)
    print(f"  generated in {time.perf_counter() - t0:.0f} s")
    return path


def memory_gib(key: str) -> float | None:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process from /proc, in GiB; None elsewhere.

    ``VmHWM`` belongs to the process's own address space, unlike ``ru_maxrss``, which on Linux
    also keeps the parent's RSS at the moment of the fork.
    """
    try:
        with open("/proc/self/status") as f:
            for row in f:
                if row.startswith(key + ":"):
                    return int(row.split()[1]) / 2**20  # kB -> GiB
    except OSError:
        pass
    return None


def child_stream(
    path: Path, threads: int, batch_segments: int, with_prep: bool, limit: int | None = None
) -> None:
    """Subprocess body: stream ``path`` and print a JSON line with timings and memory."""
    prep = load_preprocess() if with_prep else None
    rss_start = memory_gib("VmRSS")
    info = probe(path)
    trace: list[float] = []
    r = run_indexed(
        path,
        threads,
        batch_segments,
        limit=limit,
        preprocess=prep,
        on_batch=lambda: trace.append(memory_gib("VmRSS") or 0.0),
    )
    peak = memory_gib("VmHWM")
    if peak is None:  # not Linux: ru_maxrss (KiB on Linux, bytes on macOS)
        scale = 2**30 if sys.platform == "darwin" else 2**20
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
    q = max(len(trace) // 4, 1)
    r.update(
        rss_start_gib=rss_start or 0.0,
        rss_peak_gib=peak,
        rss_first_quarter_gib=max(trace[:q], default=0.0),
        rss_last_quarter_gib=max(trace[-q:], default=0.0),
        video_s=info.duration_s,
        batch_bytes=batch_segments * 4 * 3 * info.width * info.height,
    )
    print(json.dumps(r))


def memory_line(r: dict) -> str:
    """Peak RSS against the goal, and RSS early vs late in the video (flat = bounded)."""
    return (
        f"  peak RSS {r['rss_peak_gib']:.3f} GiB -> {r['rss_peak_gib'] / GOAL_RSS_GIB:.2f} of the "
        f"{GOAL_RSS_GIB} GiB limit (after imports {r['rss_start_gib']:.3f} GiB; one batch of "
        f"frames {r['batch_bytes'] / 2**20:.0f} MiB; RSS max in the first / last quarter of the "
        f"video {r['rss_first_quarter_gib']:.3f} / {r['rss_last_quarter_gib']:.3f} GiB)"
    )


def measure_long(
    path: Path, threads: int, batch_segments: int, with_prep: bool, limit: int | None = None
) -> dict:
    """Run :func:`child_stream` in a fresh interpreter and return its JSON."""
    cmd = [
        sys.executable,
        __file__,
        "--child-stream",
        str(path),
        "--threads",
        str(threads),
        "--batch-segments",
        str(batch_segments),
    ] + (["--with-prep"] if with_prep else [])
    if limit is not None:
        cmd += ["--child-limit", str(limit)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- main ----------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="FFmpeg decoding threads")
    ap.add_argument("--batch-segments", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3, help="runs per clip; the best is shown")
    ap.add_argument("--long-seconds", type=int, default=1800, help="length of the long video")
    ap.add_argument(
        "--compare-seconds",
        type=int,
        default=300,
        help="strategy comparison on this much of the long video",
    )
    ap.add_argument("--skip-long", action="store_true", help="only the real clips")
    ap.add_argument("--child-stream", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--with-prep", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-limit", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.child_stream is not None:
        child_stream(
            args.child_stream, args.threads, args.batch_segments, args.with_prep, args.child_limit
        )
        return

    prep = load_preprocess()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared machine?)")
    print(
        f"decode benchmark: {args.threads} FFmpeg threads, torch threads {args.threads}, "
        f"batch_segments={args.batch_segments}, 2 fps, 4 frames per segment"
    )
    if prep is None:
        print(
            "preprocessing NOT included: "
            "baglm_nb.models.families.internvl.preprocess_internvl not found"
        )
    else:
        prep(torch.zeros(1, 3, 480, 640, dtype=torch.uint8))  # load the compiled kernel

    print(f"\n1+2. real 640x480 clips (best of {args.repeats} runs)")
    worst_x = worst_both = float("inf")
    for clip in CLIPS:
        info = probe(clip)
        print(
            f"{clip.name}: {info.duration_s:.1f} s, {info.width}x{info.height}, "
            f"{info.codec} {info.fps:.2f} fps"
        )
        ind = best_of(
            args.repeats, lambda c=clip: run_indexed(c, args.threads, args.batch_segments)
        )
        seq = best_of(
            args.repeats, lambda c=clip: run_sequential(c, args.threads, args.batch_segments)
        )
        print(line("decode, indexed (module)", ind, info.duration_s))
        print(line("decode, sequential (alt.)", seq, info.duration_s))
        worst_x = min(worst_x, info.duration_s / ind["wall_s"])
        if prep is not None:
            both = best_of(
                args.repeats,
                lambda c=clip: run_indexed(c, args.threads, args.batch_segments, preprocess=prep),
            )
            print(
                line("decode + InternVL preprocess", both, info.duration_s)
                + f"  [preprocess {both['prep_s']:.3f} s]"
            )
            worst_both = min(worst_both, info.duration_s / both["wall_s"])
            ref = best_of(
                args.repeats,
                lambda c=clip: run_indexed(
                    c, args.threads, args.batch_segments, preprocess=torch_reference_preprocess
                ),
            )
            print(
                line("decode + torch prep. (baseline)", ref, info.duration_s)
                + f"  [preprocess {ref['prep_s']:.3f} s, "
                f"{ref['prep_s'] / both['prep_s']:.1f}x the kernel's]"
            )
    if prep is not None:
        print(f"  kernel vs torch float path on the clips' frames: {kernel_agreement(prep)}")
    a = run_indexed(CLIPS[0], args.threads, args.batch_segments, keep=True)["frames"]
    b = run_sequential(CLIPS[0], args.threads, args.batch_segments, keep=True)["frames"]
    print(f"  indexed and sequential frames identical on cup.mp4: {torch.equal(a, b)}")
    print(
        f"  => slowest clip, indexed decode: {worst_x:.1f}x real time, "
        f"{worst_x / GOAL_X_REALTIME:.2f} of the {GOAL_X_REALTIME:.0f}x goal"
    )
    if prep is not None:
        print(
            f"  => slowest clip, decode + InternVL preprocessing: {worst_both:.1f}x real time, "
            f"{worst_both / GOAL_X_REALTIME:.2f} of the {GOAL_X_REALTIME:.0f}x goal"
        )

    if args.skip_long:
        print(f"load average {os.getloadavg()[0]:.1f}")
        return
    path = long_video(args.long_seconds)
    info = probe(path)
    limit = int(args.compare_seconds // SEGMENT_DURATION)
    print(f"\n2. strategy on the first {args.compare_seconds} s of {path.name}")
    ind = run_indexed(path, args.threads, args.batch_segments, limit=limit)
    seq = run_sequential(path, args.threads, args.batch_segments, limit=limit)
    print(line("decode, indexed (module)", ind, limit * SEGMENT_DURATION))
    print(line("decode, sequential (alt.)", seq, limit * SEGMENT_DURATION))
    print(f"  indexed / sequential wall: {ind['wall_s'] / seq['wall_s']:.2f}")

    print(
        f"\n3. whole {info.duration_s / 60:.0f}-minute {info.width}x{info.height} video, "
        "iter_segments in a subprocess"
    )
    r = measure_long(path, args.threads, args.batch_segments, with_prep=False)
    print(line("decode (subprocess)", r, r["video_s"]))
    print(memory_line(r))
    if prep is not None:
        print(f"  decode + InternVL preprocess on the first {args.compare_seconds} s, subprocess:")
        r = measure_long(path, args.threads, args.batch_segments, with_prep=True, limit=limit)
        print(
            line("decode + InternVL preprocess", r, limit * SEGMENT_DURATION)
            + f"  [preprocess {r['prep_s']:.1f} s]"
        )
        print(memory_line(r))

    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
