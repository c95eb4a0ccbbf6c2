"""Time the widget explorer's recompute path (issue goal: one video's filter + plot < 0.3 s).

For each dataset, builds :class:`baglm_nb.apps.widgets.Explorer` (simulated observations, oracle D),
then times, in process and without a browser:

* ``slider``: moving the observation-quality slider (simulate the video, run the numba filter,
  per-video R@1, replace the curves of the existing plot, render the PNG), over several values;
* ``video``: switching to another video (the same, plus building that video's figure).

Reports the median and the worst time per dataset on the first ``--videos`` videos.

    .venv/bin/python benchmarks/widget_latency.py [--videos 5] [--datasets htstep crosstask]
"""

from __future__ import annotations

import argparse
import statistics
import time

from baglm_nb.apps.widgets import Explorer

GOAL_S = 0.3
SIGNALS = (0.5, 1.0, 1.5, 2.0, 2.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=5)
    parser.add_argument(
        "--datasets", nargs="+", default=["htstep", "crosstask", "ego4d_goalstep", "coin"]
    )
    args = parser.parse_args()
    start = time.perf_counter()
    explorer = Explorer(args.datasets, max_videos=args.videos)
    print(f"explorer built in {time.perf_counter() - start:.2f} s (imports excluded, numba warm)")
    print(f"{'dataset':<16}{'action':<8}{'n':>4}{'median ms':>11}{'max ms':>9}  max rows x K")
    worst = 0.0
    for name in args.datasets:
        explorer.dataset.value = name
        uids = list(explorer._by_uid)
        timings: dict[str, list[float]] = {"slider": [], "video": []}
        biggest = (0, 0)
        for uid in uids:
            explorer.video.value = uid
            timings["video"].append(explorer.seconds)
            for signal in SIGNALS:
                explorer.signal.value = signal
                timings["slider"].append(explorer.seconds)
            rows, k = explorer.result.beliefs.shape[0], explorer.result.beliefs.shape[1] - 1
            biggest = max(biggest, (rows, k))
            explorer.signal.value = round(explorer.params.signal, 2)
        for action, values in timings.items():
            med, top = statistics.median(values), max(values)
            worst = max(worst, top) if action == "slider" else worst
            print(
                f"{name:<16}{action:<8}{len(values):>4}{med * 1000:>11.0f}{top * 1000:>9.0f}"
                f"  {biggest}"
            )
    verdict = "meets" if worst < GOAL_S else "MISSES"
    print(
        f"worst slider recompute {worst * 1000:.0f} ms: {verdict} the {GOAL_S * 1000:.0f} ms goal"
    )


if __name__ == "__main__":
    main()
