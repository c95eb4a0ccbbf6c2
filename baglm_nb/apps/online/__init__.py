"""Following a procedure online: the sources, the event log and the report.

The grounder itself (:class:`~baglm_nb.core.online.OnlineGrounder`, its estimates and
hysteresis) is the online core in :mod:`baglm_nb.core.online`; this package feeds it:

* :mod:`.follow`: :func:`follow` (a file, a growing file, a URL, or a live source),
  :func:`replay` (a score cache played through the filter) and :func:`smoothed` (the
  estimates of a fixed-lag smoothing grounder, as they become due);
* :mod:`.live`: :func:`follow_live`, the consumer of :mod:`baglm_nb.inputs.live`'s reader;
* :mod:`.ending`: :class:`EndReason` (why a source stopped), Ctrl-C and SIGTERM as a flag,
  and :class:`~.ending.Interrupted`, how a run stopped by one ends;
* :mod:`.session`: one ``follow`` run of a :class:`~baglm_nb.apps.follow_config.FollowConfig`
  (never the parsed command line), set up by :mod:`.run_setup` (the replay target, the task,
  the source, the grounder) and :mod:`.alert_setup`, printed by :mod:`.terminal`;
* :mod:`.events`: the JSONL :class:`EventLog` and latency summaries;
* :mod:`.report`: the self-contained HTML report.
"""

from baglm_nb.apps.online.ending import EndReason, raise_if_stopped
from baglm_nb.apps.online.events import EventLog, median_p99
from baglm_nb.apps.online.follow import follow, replay, smoothed

__all__ = [
    "EndReason",
    "EventLog",
    "follow",
    "median_p99",
    "raise_if_stopped",
    "replay",
    "smoothed",
]
