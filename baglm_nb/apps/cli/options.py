"""Options shared by several verbs: the filter's sources and variants (resolved through
``sources``), a model behind an OpenAI-compatible server (:class:`ServerOptions`: ``score``,
``follow``, ``deps``), the stdout guard of the verbs that print a JSON summary while Ray
runs, and :func:`print_json`: what every ``--json`` flag prints (one line, the last of stdout).
Bad option values raise ``ValueError`` naming the option (exit 2, :mod:`.main`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from baglm_nb.inputs.variants import (
    BASE_PRIORS,
    PRECISIONS,
    PUBLISHED_PRECISION,
    STEPPINGS,
    TRANSITIONS,
)


def json_value(value: Any) -> Any:
    """``value`` as strict JSON values: NaN and infinities as null (JSON has neither), numpy
    scalars and arrays as numbers and lists, tuples as lists, paths and other objects as text."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if hasattr(value, "tolist"):  # a numpy scalar or array
        return json_value(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def print_json(value: Any) -> None:
    """What a ``--json`` flag prints after the verb's text: ``value`` as one line of strict JSON
    (:func:`json_value`), the last line of stdout."""
    print(json.dumps(json_value(value), allow_nan=False), flush=True)


def check_range(
    option: str,
    value: float | None,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
) -> None:
    """Bad input (``ValueError`` naming ``option``) unless ``value`` is ``None`` or a number in
    [low, high] (``low_open``: above ``low``); NaN is outside every range."""
    if value is None:
        return
    too_low = low is not None and (value <= low if low_open else value < low)
    if value != value or too_low or (high is not None and value > high):
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"<= {high:g}"
        bounds = " and ".join(b for b in (lo, hi) if b)
        raise ValueError(f"{option} {value:g} is out of range: expected {bounds}")


def run_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The command's options as a table's parameters (``summary.json``): every parsed value
    but the verb's function, any password in a URL hidden."""
    from baglm_nb.inputs.urls import redact_url

    return {
        name: redact_url(value) if isinstance(value, str) else value
        for name, value in vars(args).items()
        if name != "func"
    }


def add_observation_arguments(p: argparse.ArgumentParser) -> None:
    """The options shared by verbs that run the filter: sources, variants and ``--limit``."""
    from baglm_nb.core.simulate_deps import SIMULATED_LLM

    p.add_argument(
        "--scores",
        required=True,
        help="score cache folder, or 'simulated' (the default twin), 'simulated:iid', "
        "'simulated:pinned'",
    )
    p.add_argument(
        "--deps",
        default=SIMULATED_LLM,
        help=f"dependency source: '{SIMULATED_LLM}' (default: a simulated LLM's "
        "matrices), 'simulated-llm:gpt', 'oracle', 'none', 'imported' or a "
        "dependency cache folder",
    )
    p.add_argument("--transition", default="both", choices=TRANSITIONS)
    p.add_argument("--prior", default="uniform", choices=BASE_PRIORS)
    p.add_argument("--stepping", default="second", choices=STEPPINGS)
    p.add_argument("--progress", default="scores", choices=["scores", "oracle"])
    p.add_argument(
        "--limit", type=int, default=None, help="use the first N videos (annotation-file order)"
    )
    p.add_argument(
        "--allow-length-mismatch",
        action="store_true",
        help="warn, instead of refusing, when a cached video's length differs from "
        "its annotation by more than one segment",
    )
    p.add_argument(
        "--precision",
        default=None,
        choices=PRECISIONS,
        help=f"the filter's arithmetic (default: {PUBLISHED_PRECISION} on the authors' "
        f"imported files, as the published code computes; {PRECISIONS[0]} otherwise)",
    )
    add_stay_argument(p)


def add_stay_argument(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--stay S`` (beyond the paper): the filter's transitions mixed with staying."""
    p.add_argument(
        "--stay",
        default="0",
        metavar="S",
        help="beyond the paper: mix each transition row with staying, (1 - S) T + S I, S in "
        "[0, 1) (default 0: the paper's filter); float64 only",
    )


def stay_from_args(args: argparse.Namespace, precision: str = "float64") -> float:
    """``--stay`` as a float in [0, 1), stored back on ``args``; ``ValueError`` naming the
    option for a bad value, or for a non-zero stay in the published float32 ``precision``."""
    from baglm_nb.core.filtering import check_stay

    text = args.stay
    try:
        value = float(str(text).strip())
    except ValueError:
        value = float("nan")
    if not 0.0 <= value < 1.0:  # NaN too
        raise ValueError(f"--stay {text!r}: must be a number in [0, 1)")
    try:
        args.stay = check_stay(value, precision)
    except ValueError:
        raise ValueError(
            f"--stay {text}: stay runs in float64 only; these observations run in "
            f"{precision} (add --precision float64)"
        ) from None
    return args.stay


def filter_options(args: argparse.Namespace) -> dict[str, Any]:
    """The filter variant chosen with :func:`add_observation_arguments`, as keyword arguments
    (``stay`` as :func:`observations_from_args` checked it)."""
    return {k: getattr(args, k) for k in ("transition", "prior", "stepping", "progress", "stay")}


def observations_from_args(args: argparse.Namespace):
    """``--dataset``, ``--scores``, ``--limit`` and ``--precision`` as observations; ``--stay``
    is checked before they load and against their precision after (:func:`stay_from_args`)."""
    from baglm_nb.core import sources

    check_range("--limit", args.limit, 1)
    stay_from_args(args)
    obs = sources.observations(
        args.dataset,
        args.scores,
        limit=args.limit,
        precision=getattr(args, "precision", None),
        length_mismatch="warn" if getattr(args, "allow_length_mismatch", False) else "error",
    )
    stay_from_args(args, obs.precision)
    return obs


def deps_from_args(args: argparse.Namespace) -> Any:
    """``--deps`` resolved for ``--dataset`` (:func:`baglm_nb.core.sources.dependencies`)."""
    from baglm_nb.core import sources

    return sources.dependencies(args.dataset, args.deps)


@dataclass(frozen=True)
class ServerOptions:
    """A model behind an OpenAI-compatible server (the OpenAI API, vLLM, llama.cpp's server):
    the one declaration of the server flags of every verb that talks to one (``score``,
    ``follow``, ``deps``). An instance's values are the verb's defaults."""

    #: ``--base-url``: the server's URL (None: the OpenAI API).
    base_url: str | None = None
    #: ``--api-key-env``: the NAME of the environment variable holding the key.
    api_key_env: str = "OPENAI_API_KEY"
    #: ``--top-logprobs``: log-probabilities to ask for per answer position.
    top_logprobs: int | None = None
    #: ``--concurrency``: requests in flight.
    concurrency: int = 4
    #: The per-request timeout in seconds (``--timeout``, or ``--request-timeout`` where the
    #: verb's ``--timeout`` means something else).
    request_timeout: float = 120.0
    #: ``--request-attempts``: attempts per request, with backoff.
    request_attempts: int = 3

    def add_arguments(
        self, g, *, timeout_option: str = "--timeout", top_logprobs_help: str = ""
    ) -> None:
        """Declare the server flags in ``g`` (a parser or an argument group), defaulting to this
        instance's values; ``timeout_option`` names the per-request timeout."""
        g.add_argument(
            "--base-url",
            default=self.base_url,
            help="server URL, e.g. http://127.0.0.1:8000/v1 (default: the OpenAI API)",
        )
        g.add_argument(
            "--api-key-env",
            default=self.api_key_env,
            help="NAME of the environment variable holding the key (never the key "
            "itself; for a server without a key, set it to any placeholder)",
        )
        g.add_argument(
            "--top-logprobs",
            type=int,
            default=self.top_logprobs,
            help=top_logprobs_help or f"top_logprobs to ask for (default {self.top_logprobs})",
        )
        g.add_argument(
            "--concurrency",
            type=int,
            default=self.concurrency,
            help=f"requests in flight (default {self.concurrency})",
        )
        g.add_argument(
            timeout_option,
            type=float,
            default=self.request_timeout,
            dest="request_timeout",
            help=f"seconds per request (default {self.request_timeout:g})",
        )
        g.add_argument(
            "--request-attempts",
            type=int,
            default=self.request_attempts,
            help=f"attempts per request, with backoff (default {self.request_attempts})",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServerOptions:
        """The options declared by :meth:`add_arguments`, as parsed."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})

    def connection(self) -> Any:
        """The server, its key's variable, the timeout and the attempts, as the
        :class:`~baglm_nb.models.openai_client.ConnectionOptions` of a client."""
        from baglm_nb.models.openai_client import ConnectionOptions

        return ConnectionOptions(
            self.base_url,
            self.api_key_env,
            timeout=self.request_timeout,
            max_attempts=self.request_attempts,
        )


def add_live_source_arguments(p: argparse.ArgumentParser) -> None:
    """The live-source options of ``follow`` (:mod:`baglm_nb.inputs.live`), parsed under the
    names and with the defaults of :class:`~baglm_nb.apps.follow_config.FollowConfig`."""
    from baglm_nb.apps.follow_config import DEFAULT

    live = p.add_argument_group("live sources (streams and cameras)")
    live.add_argument("--camera", type=int, metavar="N", help="follow the V4L2 camera /dev/videoN")
    live.add_argument(
        "--live",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read SOURCE frame by frame as a live stream, on the stream's own "
        "clock (default: streams, cameras and http(s) without a length; --live "
        "on a file compares it with a stream of it)",
    )
    live.add_argument(
        "--lag",
        choices=["drop", "queue"],
        dest="lag_policy",
        help="when scoring is slower than real time: 'drop' skips to the newest "
        "segment and logs the skipped span as a gap (default for live sources); "
        "'queue' keeps every segment (default for files)",
    )
    live.add_argument(
        "--reconnect",
        type=int,
        default=DEFAULT.reconnect,
        metavar="N",
        help="reopen a lost or stalled live source up to N times (per loss), "
        "waiting 0.5, 1, 2, 4, then 5 s before each attempt; the lost span is "
        "logged as a gap",
    )
    live.add_argument(
        "--reconnect-window",
        type=float,
        default=DEFAULT.reconnect_window_s,
        dest="reconnect_window_s",
        metavar="SECONDS",
        help="keep reopening a lost live source until SECONDS after the loss "
        "(e.g. 30 to ride out a server or camera restart)",
    )
    live.add_argument(
        "--transport",
        choices=["tcp", "udp"],
        default=DEFAULT.transport,
        help=f"RTSP transport (default: {DEFAULT.transport})",
    )


def check_live_source_options(args: argparse.Namespace) -> None:
    """Bad input naming the one option of :func:`add_live_source_arguments` out of range."""
    check_range("--reconnect", args.reconnect, 0)
    check_range("--reconnect-window", args.reconnect_window_s, 0)
    check_range("--timeout", args.timeout_s, 0, low_open=True)


def add_alert_threshold(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--alert-threshold`` (:mod:`baglm_nb.core.alerts`), of ``follow`` and ``alerts``."""
    from baglm_nb.core.alerts import DEFAULT_THRESHOLD

    p.add_argument(
        "--alert-threshold",
        type=float,
        default=DEFAULT_THRESHOLD,
        metavar="P",
        help=f"step k needs step j when D[k, j] >= P, P in [0, 1] (default: {DEFAULT_THRESHOLD:g})",
    )


def add_alert_arguments(p: argparse.ArgumentParser) -> None:
    """The alert options of ``follow``: ``--alerts`` / ``--no-alerts`` and the threshold."""
    alerts = p.add_argument_group("alerts (read from the prerequisites D)")
    alerts.add_argument(
        "--alerts",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="warn when a step is announced before a step it needs was seen, "
        "and list skipped steps (default: on when the run has a D: a dataset "
        "video with --deps other than 'none', or a task file with a "
        "'dependency' field)",
    )
    add_alert_threshold(alerts)


def add_served_arguments(p: argparse.ArgumentParser, *, timeout_option: str = "--timeout") -> None:
    """The options of a served scoring model (``--backend openai``): :class:`ServerOptions`
    and how the model's frames and answers are read.

    ``timeout_option`` names the per-request timeout (``follow`` has its own ``--timeout``,
    for a stalled source, and uses ``--request-timeout``)."""
    g = p.add_argument_group("served model (--backend openai, or --model openai:NAME)")
    g.add_argument(
        "--backend",
        choices=["local", "openai"],
        default="local",
        help="local: load --model here (default); openai: --model is served by an "
        "OpenAI-compatible server at --base-url",
    )
    ServerOptions().add_arguments(
        g,
        timeout_option=timeout_option,
        top_logprobs_help="full-vocab: top_logprobs to ask for (default: the vocabulary size, "
        "else -1)",
    )
    from baglm_nb.models.families import FAMILIES, in_words

    g.add_argument(
        "--family",
        help=f"{in_words(FAMILIES)}: how the frames are laid out and sized "
        "(default: from the model name)",
    )
    g.add_argument(
        "--strategy",
        default="auto",
        help="how answer probabilities are read: auto (probe the server; says on "
        "stderr which it took and why), labels (each answer forced with logit_bias, "
        "exact where the probe finds it so), full-vocab, prompt-logprobs (vLLM) or "
        "approx-top20 (needs --allow-approx)",
    )
    g.add_argument(
        "--allow-approx",
        action="store_true",
        help="accept top_logprobs=20 as an approximation when the server offers no "
        "more (refused for videos with K+1 > 20)",
    )
    g.add_argument(
        "--tokenizer",
        help="the served model's tokenizer (folder or id in the local "
        "Hugging Face cache), for tokenizer-aware option labels beyond Z",
    )


def served_scorer(args: argparse.Namespace, model: str) -> Any:
    """A :class:`~baglm_nb.models.served.ServedScorer` from :func:`add_served_arguments`."""
    from baglm_nb.models.served import ServedScorer

    tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer, local_files_only=True)
    server = ServerOptions.from_args(args)
    return ServedScorer(
        model,
        family=args.family,
        connection=server.connection(),
        strategy=args.strategy,
        allow_approx=args.allow_approx,
        top_logprobs=server.top_logprobs,
        concurrency=server.concurrency,
        tokenizer=tokenizer,
    )


@contextlib.contextmanager
def stdout_to_stderr(active: bool = True) -> Iterator[None]:
    """Send everything written to stdout (Python's and the file descriptor's) to stderr.

    Verbs that print a JSON summary on stdout run Ray inside this, so that the lines Ray and its
    workers print (forwarded to the driver's stdout) never mix into the summary.
    """
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def smoothing_lag(text: str | None, flag: str, *, allow_inf: bool) -> int | None:
    """A smoothing lag's value (``evaluate --smoothing-lag-s`` seconds, ``follow
    --lag-segments`` segments): a whole number >= 0, or ``inf`` (None) where allowed.

    Raises ``ValueError`` naming ``flag`` and ``text`` (one ``error:`` line, exit 2).
    """
    if text is None:
        return 0
    value = str(text).strip()
    if value.lower() in ("inf", "infinity"):
        if allow_inf:
            return None
        raise ValueError(
            f"{flag} {text!r}: 'inf' is not allowed here; give a whole number of segments >= 0"
        )
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < 0:
        what = "a whole number >= 0 or 'inf'" if allow_inf else "a whole number >= 0"
        raise ValueError(f"{flag} {text!r}: must be {what}")
    return number
