"""Feed an :class:`~baglm_nb.core.online.OnlineGrounder` from a source, one segment at a time.

:func:`follow` reads a video file, a file that is still being written, or a URL (through
torchcodec/FFmpeg, on the published frame grid), or a live stream or camera (through
:mod:`baglm_nb.inputs.live` and :mod:`baglm_nb.apps.online.live`, on the stream grid) and
scores it with a real scorer; :func:`replay` plays a score cache of an already scored video
through the online filter (the CPU default for demos without weights, labelled ``replay``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import numpy as np

from baglm_nb.apps.online.ending import EndReason, raise_if_stopped
from baglm_nb.core.online import Estimate, OnlineGrounder
from baglm_nb.inputs.variants import SAMPLING_FPS

__all__ = ["follow", "replay", "smoothed"]


def replay(
    grounder: OnlineGrounder,
    vsg: np.ndarray,
    progress: np.ndarray,
    *,
    pace: str = "fast",
    speed: float = 1.0,
) -> Iterator[Estimate]:
    """Play per-segment scores (S, K+1) and (S, K, 10) through ``grounder``.

    ``pace="realtime"`` waits so that segments arrive at ``speed`` times real time;
    ``"fast"`` goes as fast as possible.
    """
    if pace not in ("fast", "realtime"):
        raise ValueError(f"pace must be 'fast' or 'realtime', got {pace!r}")
    vsg, progress = np.asarray(vsg), np.asarray(progress)
    start = time.perf_counter()
    for s in range(vsg.shape[0]):
        if pace == "realtime":
            due = start + s * grounder.segment_duration / speed
            time.sleep(max(0.0, due - time.perf_counter()))
        yield grounder.push_scores(vsg[s], progress[s])


def smoothed(stream: Iterator, grounder: OnlineGrounder) -> Iterator:
    """``stream``'s items as ``grounder`` emits its estimates: unchanged without smoothing;
    with ``lag_segments=N``, each segment's smoothed estimate ``N`` segments late (other
    items, such as live gaps, pass at once), and the held ones when the stream ends."""
    if grounder.smoother is None:
        yield from stream
        return
    try:
        for item in stream:
            if isinstance(item, Estimate):
                yield from grounder.take_smoothed()
            else:
                yield item
        yield from grounder.finish()
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def follow(
    source: str | os.PathLike,
    grounder: OnlineGrounder,
    *,
    growing: bool = False,
    timeout: float = 10.0,
    poll: float = 0.5,
    sampling_fps: float = SAMPLING_FPS,
    device: str = "cpu",
    on_end=None,
    live: bool | None = None,
    stop: threading.Event | None = None,
    **live_options,
) -> Iterator[Estimate]:
    """Follow a video file, a file still being written (``growing=True``), a URL or a live source.

    Each whole segment is decoded (:func:`baglm_nb.inputs.video.iter_segments`), scored and filtered
    as it becomes available. A growing file is re-probed every ``poll`` seconds and the run
    stops when no new segment arrives for ``timeout`` seconds. When the source ends or breaks,
    the generator stops; ``on_end(reason)`` (if given) receives an :class:`EndReason` (a str;
    ``failed`` when the source broke). Everything emitted before stays valid.

    A live source (an RTSP/UDP/SRT URL, a camera, an http(s) stream without a length, or any
    source with ``live=True``; :func:`baglm_nb.inputs.live.live_source`), or a started
    :class:`~baglm_nb.inputs.live.LiveReader`, is followed by
    :func:`baglm_nb.apps.online.live.follow_live`, which also yields
    :class:`~baglm_nb.inputs.live.Gap` events; ``live_options`` (``lag``, ``reconnect``,
    ``transport``, ``pace``) go to it, ``timeout`` is its stall limit. ``stop`` (an Event a
    Ctrl-C handler sets) raises ``KeyboardInterrupt`` at the next segment or poll.
    """
    from baglm_nb.apps.online.live import follow_live
    from baglm_nb.inputs.live import live_reader_for

    reader = live_reader_for(
        source,
        segment_duration=grounder.segment_duration,
        live=live,
        timeout=timeout,
        sampling_fps=sampling_fps,
        **live_options,
    )
    if reader is not None:
        yield from follow_live(reader, grounder, on_end=on_end, stop=stop)
        return
    yield from _follow_file(
        source,
        grounder,
        growing=growing,
        timeout=timeout,
        poll=poll,
        sampling_fps=sampling_fps,
        device=device,
        on_end=on_end,
        stop=stop,
    )


def _follow_file(
    source: str | os.PathLike,
    grounder: OnlineGrounder,
    *,
    growing: bool,
    timeout: float,
    poll: float,
    sampling_fps: float,
    device: str,
    on_end,
    stop: threading.Event | None,
):
    """:func:`follow` for a file, a growing file or a seekable URL (the published grid)."""
    from baglm_nb.inputs.video import VideoError, iter_segments

    done, error = 0, None
    last_new = time.monotonic()
    while True:
        try:
            for batch in iter_segments(
                source,
                segment_duration=grounder.segment_duration,
                sampling_fps=sampling_fps,
                batch_segments=1,
                device=device,
                start_segment=done,
                growing=growing,
            ):
                decode_s = batch.decode_s / max(len(batch.frames), 1)
                for frames in batch.frames:
                    raise_if_stopped(stop)
                    yield grounder.push(frames, decode_s=decode_s)
                    done += 1
                    last_new = time.monotonic()
        except VideoError as exc:
            error = exc
            if not growing:
                if on_end:
                    on_end(EndReason(f"source broke after {done} segments: {exc}", True))
                return
        if not growing:
            if on_end:
                on_end(EndReason(f"source ended after {done} segments"))
            return
        if time.monotonic() - last_new > timeout:
            if on_end:
                last = f" (last error: {error})" if error is not None else ""
                on_end(
                    EndReason(
                        f"no new frames for {timeout:g} s; stopped after {done} segments{last}",
                        done == 0,
                    )
                )
            return
        raise_if_stopped(stop)
        time.sleep(poll)
