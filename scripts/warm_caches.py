"""`make setup`'s last step: build once, at install time, what every first run would build.

    python scripts/warm_caches.py [--numba] [--models] [--fixtures]   (no flag: all three)

  --numba     compile baglm_nb's numba kernels into their on-disk caches (``__pycache__`` beside
              each module, or ``$NUMBA_CACHE_DIR``), by running the product's own paths on small
              inputs: ``evaluate`` and ``localize`` under each filter option, the float32
              published path, the smoother, ``follow --replay``, a score cache written and read
              back, the frame resampler. Without it, the first process that reaches a kernel
              compiles it (seconds each; a notebook kernel, a test worker and a CLI run may each
              pay for the same kernel when they start together).
  --models    convert the SmolLM2 GGUF that ``deps --backend smollm2`` loads into the model cache
              (:func:`baglm_nb.models.gguf.model_cache_dir`), as its first use would (tens of
              CPU-seconds).
  --fixtures  the tiny Qwen2.5-VL GGUF pairs that the served-scorer tests serve
              (:func:`baglm_nb.models.testing.random_gguf`, seeds 0 and 1), into the same cache.

Each step is the product's own caching: it only does what the first real use would do, keyed as
that use keys it (a source change recompiles a kernel; a changed file converts again), so a warm
cache is never stale, and running this again costs little. Prints one line per step with its
seconds; exits 1 with an ``error:`` line when a step fails (``--debug`` for the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: ``evaluate`` option sets that reach every offline filter kernel (each transition, prior,
#: stepping and progress source, the smoother, the float32 published path).
EVALUATE_OPTIONS: tuple[tuple[str, ...], ...] = (
    (),
    ("--transition", "static"),
    ("--transition", "readiness"),
    ("--transition", "validity"),
    ("--prior", "uniform"),
    ("--stepping", "segment"),
    ("--stepping", "segment", "--smoothing-lag-s", "4"),
    ("--progress", "oracle"),
    ("--smoothing-lag-s", "4"),
    ("--smoothing-lag-s", "inf"),
    ("--stay", "0.1"),
    ("--precision", "float32-published"),
    ("--precision", "float32-published", "--transition", "static"),
    ("--precision", "float32-published", "--stepping", "segment"),
)


def _quiet_main(*argv: str) -> None:
    """One CLI verb in this process, its output dropped; a non-zero exit is an error."""
    from baglm_nb.apps.cli.main import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main([argv[0], "--debug", *argv[1:]])
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    if rc != 0:
        last = err.getvalue().strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"baglm-nb {' '.join(argv)} exited {rc}: {last[0]}")


def warm_numba() -> None:
    """Run the paths that call every numba kernel, on one or two videos each."""
    import json

    import torch

    from baglm_nb.models.resample import resize_normalize

    with tempfile.TemporaryDirectory(prefix="baglm-warm-") as tmp:
        cache_root = Path(tmp) / "cache"
        manifest = Path(tmp) / "manifest.json"
        _quiet_main(
            "simulate",
            "--dataset",
            "htstep",
            "--limit",
            "1",
            "--cache-root",
            str(cache_root),
            "--manifest",
            str(manifest),
        )
        cached = json.loads(manifest.read_text())["scores"]["htstep"]
        for scores in ("simulated", cached):
            for options in EVALUATE_OPTIONS:
                _quiet_main(
                    "evaluate", "--dataset", "htstep", "--scores", scores, "--limit", "1", *options
                )
        for dataset in ("htstep", "ego4d_goalstep"):
            _quiet_main("localize", "--dataset", dataset, "--scores", "simulated", "--limit", "1")
        _quiet_main("alerts", "--dataset", "htstep", "--limit", "1", "--out", str(Path(tmp) / "a"))
        uid = _first_uid("htstep")
        for scores in ("simulated", cached):
            _quiet_main("follow", "--replay", scores, "--dataset", "htstep", "--", uid)
    frames = torch.zeros((2, 3, 48, 64), dtype=torch.uint8)
    resize_normalize(frames, (32, 32), (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    channels_last = frames.contiguous(memory_format=torch.channels_last)
    resize_normalize(channels_last, (32, 32), (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))


def _first_uid(dataset: str) -> str:
    from baglm_nb.inputs.datasets import load_dataset

    return load_dataset(dataset)[0].uid


def warm_models() -> None:
    """The SmolLM2 GGUF, converted as ``deps --backend smollm2`` converts it on first use."""
    from baglm_nb.models.gguf import convert_gguf
    from baglm_nb.models.llm_local import smollm2_gguf

    convert_gguf(smollm2_gguf())


def warm_fixtures() -> None:
    """The served-scorer tests' tiny Qwen2.5-VL GGUF pairs (seeds 0 and 1)."""
    from baglm_nb.models.testing import random_gguf

    random_gguf("qwen2_5_vl")
    random_gguf("qwen2_5_vl", seed=1)


STEPS: dict[str, Callable[[], None]] = {
    "numba": warm_numba,
    "models": warm_models,
    "fixtures": warm_fixtures,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for name in STEPS:
        parser.add_argument(f"--{name}", action="store_true", help=f"only the {name} step(s)")
    parser.add_argument("--debug", action="store_true", help="on an error, the traceback")
    args = parser.parse_args(argv)
    chosen = [n for n in STEPS if getattr(args, n)] or list(STEPS)
    os.environ.setdefault("MPLBACKEND", "Agg")
    # no progress bars in setup's log: its heartbeat shows the log's last line
    os.environ.setdefault("TQDM_DISABLE", "1")
    for name in chosen:
        t0 = time.monotonic()
        try:
            STEPS[name]()
        except Exception as exc:  # one error line, as the CLI does
            if args.debug:
                raise
            print(f"error: warming the {name} cache failed: {exc}", file=sys.stderr)
            return 1
        print(f"warm: {name} {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
