"""``python -m baglm_nb follow``: say which step is happening now, live.

``follow SOURCE --model ID --task TASK`` scores a video file, a growing file, a URL, a live
stream (``rtsp://``, ``udp://``, ``srt://``, live ``http(s)://`` MPEG-TS or HLS) or a camera
(``/dev/videoN``, ``--camera N``); the source is checked before the model loads, and a source
that breaks or yields no segment ends with exit code 1 after the event log and the report are
written;
``follow --replay [SCORES] [--dataset NAME] -- UID`` replays scores through the online filter:
``simulated`` (the default; one video simulated on demand through :mod:`baglm_nb.core.sources`)
or a score-cache folder (or a folder above one). Without a uid, ``--replay`` lists the videos
it can replay. A dataset video's D is ``--deps``, by default the notebooks' (the simulated
LLaMA's, ``simulated-llm:llama``); the first lines printed and the report's banner name the
observations, D, threshold, patience and smoothing lag
(:mod:`baglm_nb.apps.online.run_settings`). The run itself is
:func:`baglm_nb.apps.online.session.run_follow`; bad input raises ``ValueError`` /
``FileNotFoundError`` naming the path or uid, which :func:`baglm_nb.apps.cli.main.main` turns
into one ``error:`` line and exit code 2 (``--debug``
shows the traceback).
"""

from __future__ import annotations

import argparse
from typing import Any

from baglm_nb.apps.cli.options import (
    add_alert_arguments,
    add_live_source_arguments,
    add_served_arguments,
    add_stay_argument,
)
from baglm_nb.inputs import follow_defaults as chosen
from baglm_nb.inputs.variants import TRANSITIONS


def register(verbs) -> None:
    """Add the ``follow`` verb."""
    from baglm_nb.core.simulate_deps import SIMULATED_LLM
    from baglm_nb.inputs.datasets import DATASETS

    p = verbs.add_parser(
        "follow",
        help="follow a video, a growing file or a URL (or replay scores) online",
        description="Prints one line per announced step change plus a status line. "
        "SOURCE is a video file or URL with --model, or a video uid with --replay (put it "
        "after --, uids may start with '-'). --replay without a uid lists the videos.",
    )
    p.add_argument(
        "source",
        nargs="?",
        help="video file, URL, live stream (rtsp://, udp://, srt://, http(s)://) or "
        "/dev/videoN (with --model), or video uid (with --replay)",
    )
    p.add_argument(
        "--task",
        help="task file (JSON or YAML); with --replay or a dataset video, "
        "defaults to the video's annotation",
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--model",
        help="scorer model id (needs local weights; "
        "random-init:<family>: a tiny random model, mechanics only)",
    )
    group.add_argument(
        "--replay",
        metavar="SCORES",
        nargs="?",
        const="simulated",
        help="replay scores: 'simulated' (default: simulated on demand, the default twin; "
        "'simulated:iid' or 'simulated:pinned' names one) or a score-cache folder, or a "
        "folder above one",
    )
    p.add_argument(
        "--dataset",
        choices=sorted(DATASETS),
        help="the video's dataset (--replay simulated: found from the uid if "
        "omitted; --model: a file named <uid>.<ext> gets its ground truth)",
    )
    p.add_argument(
        "--deps",
        default=SIMULATED_LLM,
        help=f"for a dataset video without --task: D, as the notebooks take it: "
        f"'{SIMULATED_LLM}' (default, the notebooks' D), 'simulated-llm:gpt', 'oracle', "
        "'none' or a dependency cache folder",
    )
    p.add_argument(
        "--pace",
        choices=["fast", "realtime"],
        default="fast",
        help="--replay, or a file read with --live: 'realtime' plays it at its own "
        "rate (as a camera would)",
    )
    p.add_argument("--growing", action="store_true", help="the file is still being written")
    p.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds without new frames before a growing file ends, or before a "
        "live source counts as stalled (an error)",
    )
    add_live_source_arguments(p)
    _add_online_filter_options(p)
    add_alert_arguments(p)
    p.add_argument("--jsonl", help="write the event log here (JSON lines)")
    p.add_argument("--html", help="write a self-contained HTML report here")
    p.add_argument("--trust-remote-code", action="store_true")
    add_served_arguments(p, timeout_option="--request-timeout")
    p.set_defaults(func=run, quick_exit=True)  # a person waits for its end (main.end_process)


def _add_online_filter_options(p: argparse.ArgumentParser) -> None:
    """The online filter's options (announcements: :mod:`~baglm_nb.inputs.follow_defaults`)."""
    p.add_argument("--transition", default="both", choices=TRANSITIONS)
    p.add_argument("--threshold", type=float, default=chosen.FOLLOW_THRESHOLD, help="confidence")
    p.add_argument("--patience", type=int, default=chosen.FOLLOW_PATIENCE_SEGMENTS, help="segments")
    p.add_argument(
        "--smoothing-lag",
        metavar="N",
        default=str(chosen.FOLLOW_LAG_SEGMENTS),
        help="fixed-lag smoothing: each segment's belief from the N segments after it, emitted N "
        "segments late (lag_s in the event log), announced on the smoothed beliefs (default "
        f"{chosen.FOLLOW_LAG_SEGMENTS}; 0: the filter)",
    )
    add_stay_argument(p)


def run(args: argparse.Namespace) -> int:
    """Run the ``follow`` verb (errors: :func:`baglm_nb.apps.cli.main.main`'s rule)."""
    from baglm_nb.apps.cli.options import check_live_source_options, smoothing_lag, stay_from_args
    from baglm_nb.apps.online.session import run_follow

    # a bad value is refused before anything loads
    check_live_source_options(args)
    args.smoothing_lag = smoothing_lag(args.smoothing_lag, "--smoothing-lag", allow_inf=False)
    stay_from_args(args)
    return run_follow(args, lambda: _scorer(args))


def _scorer(args: argparse.Namespace) -> Any:
    """The scorer of ``--model``: served (``--backend openai`` or ``openai:NAME``) or local."""
    from baglm_nb.apps.cli.options import served_scorer
    from baglm_nb.models.scoring import make_scorer
    from baglm_nb.models.served import is_served, served_name

    if args.backend == "openai" or is_served(args.model):
        return served_scorer(args, served_name(args.model))
    return make_scorer(args.model, trust_remote_code=args.trust_remote_code)
