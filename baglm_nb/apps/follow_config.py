"""What one ``follow`` run is given: :class:`FollowConfig`, the one place of its defaults.

The command line (:mod:`baglm_nb.apps.cli.follow`) parses and checks the flags and builds a
frozen :class:`FollowConfig`; the run (:func:`baglm_nb.apps.online.session.run_follow` and the
modules it calls) reads only this object, never the parsed command line. The flags' defaults
are :data:`DEFAULT`'s values, so a default is changed here, once. The scoring model itself is
not part of it: the command line hands the run a function that loads it.

This module loads no torch or numba, so that building the command line does not load them.
"""

from __future__ import annotations

from dataclasses import dataclass

from baglm_nb.core.alerts import DEFAULT_THRESHOLD
from baglm_nb.core.simulate_deps import SIMULATED_LLM
from baglm_nb.inputs import follow_defaults as chosen

__all__ = ["DEFAULT", "FollowConfig"]


@dataclass(frozen=True)
class FollowConfig:
    """The settings of one ``follow`` run, each under the name of its unit.

    The flag of each field is its name with dashes, except where the unit is spelled out:
    ``--task`` (``task_path``), ``--timeout`` (``timeout_s``), ``--lag`` (``lag_policy``),
    ``--reconnect-window`` (``reconnect_window_s``), ``--patience`` (``patience_segments``),
    ``--lag-segments`` (``lag_segments``), ``--jsonl`` (``jsonl_path``) and ``--html``
    (``html_path``).
    """

    # what is followed
    #: A video file, URL, live stream or ``/dev/videoN`` (``--model``), or a video uid
    #: (``--replay``); None: none given.
    source: str | None = None
    #: ``--model``: the scorer's model id (None with ``--replay``); named in the run's source.
    model: str | None = None
    #: ``--replay``: ``simulated``, a simulated twin by name, or a score-cache folder.
    replay: str | None = None
    #: ``--dataset``: the video's dataset (None: found from the uid, or none).
    dataset: str | None = None
    #: ``--task``: a task file (JSON or YAML); None: the video's annotation.
    task_path: str | None = None
    #: ``--deps``: a dataset video's D without ``--task``, as the notebooks take it.
    deps: str = SIMULATED_LLM

    # how the source is read
    #: ``--pace``: ``fast``, or ``realtime`` (a replay or a ``--live`` file at its own rate).
    pace: str = "fast"
    #: ``--growing``: the file is still being written.
    growing: bool = False
    #: ``--timeout``: seconds without new frames before a growing file ends, or before a live
    #: source counts as stalled.
    timeout_s: float = 10.0
    #: ``--camera``: follow ``/dev/videoN`` (None: no camera).
    camera: int | None = None
    #: ``--live`` / ``--no-live``: read the source as a live stream (None: by its kind).
    live: bool | None = None
    #: ``--lag``: ``drop`` or ``queue`` when scoring is slower than real time (None: by kind).
    lag_policy: str | None = None
    #: ``--reconnect``: reopen a lost live source up to this many times per loss.
    reconnect: int = 0
    #: ``--reconnect-window``: keep reopening until this many seconds after the loss.
    reconnect_window_s: float = 0.0
    #: ``--transport``: the RTSP transport, ``tcp`` or ``udp``.
    transport: str = "tcp"

    # the filter and its announcements
    #: ``--transition``: the filter's transition (:data:`baglm_nb.inputs.variants.TRANSITIONS`).
    transition: str = "both"
    #: ``--threshold``: the confidence an announcement needs (hysteresis).
    threshold: float = chosen.FOLLOW_THRESHOLD
    #: ``--patience``: the segments in a row an announcement needs (hysteresis).
    patience_segments: int = chosen.FOLLOW_PATIENCE_SEGMENTS
    #: ``--lag-segments``: fixed-lag smoothing, in segments (0: the filter).
    lag_segments: int = chosen.FOLLOW_LAG_SEGMENTS
    #: ``--stay``: beyond the paper, each transition row mixed with staying (0: the paper's).
    stay: float = 0.0

    # alerts and outputs
    #: ``--alerts`` / ``--no-alerts`` (None: on when the run has a D with a prerequisite).
    alerts: bool | None = None
    #: ``--alert-threshold``: step k needs step j when ``D[k, j] >=`` this.
    alert_threshold: float = DEFAULT_THRESHOLD
    #: ``--jsonl``: where the event log goes (None: no log).
    jsonl_path: str | None = None
    #: ``--html``: where the HTML report goes (None: no report).
    html_path: str | None = None


#: The defaults of every ``follow`` flag.
DEFAULT = FollowConfig()
