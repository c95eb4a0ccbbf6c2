"""Score segments with an LMM behind an OpenAI-compatible server (vLLM, SGLang, llama.cpp, an API).

:class:`ServedScorer` is a :class:`~baglm_nb.models.engine.Scorer`: it asks the same questions as
the local scorer (:mod:`baglm_nb.models.questions`) through ``/v1/chat/completions`` and reads
the answer probabilities from the first generated token's logprobs, so it plugs into
:func:`baglm_nb.models.scoring.score_dataset` (cache, resume, timings, ``failures.json``).

**Messages.** Each segment's F frames go as base64 PNG images (lossless) in the user message, in
the order and count of the family's published prompt (:func:`user_content`), with the family's
default system message (:data:`~baglm_nb.models.families.DEFAULT_SYSTEM`): InternVL
``"Frame1: <image>\\nFrame2: <image>\\n...{question}"``; Qwen2.5-VL and LLaVA-OneVision the F frames
then the question (their published input is one *video*; a server receives F images instead,
see the README's fidelity notes). The server renders the model's own chat template; the frames
are sent at the family's processor size (:func:`served_frames`, within the pixel bounds of the
family spec).

**Probabilities** (``strategy``), in order of preference (``"auto"`` probes the server once and
says on stderr which strategy it took and why, :attr:`ServedScorer.strategy_reason`):

* ``"labels"``: one request per answer, the answer's token forced with ``logit_bias`` and its
  raw logprob read (:mod:`baglm_nb.models.served_labels`); exact where the server reports the
  generated token's logprob from the raw logits, which the probe checks (llama.cpp: yes). The
  token ids come from ``--tokenizer`` or the server's ``/tokenize``; a label of several tokens
  is refused with its ids. Responses of under 1 KB instead of the whole vocabulary's;
* ``"full-vocab"``: ``top_logprobs`` = the vocabulary size (llama.cpp's ``/v1/models`` reports
  it; otherwise ``-1``, vLLM's "all" with ``--max-logprobs -1``); every answer is read exactly;
* ``"prompt-logprobs"``: one request per answer with the answer prefilled as the assistant turn
  (``continue_final_message``) and ``prompt_logprobs=0`` (vLLM): the exact logprob of the answer
  token at the first generated position;
* ``"approx-top20"``: ``top_logprobs=20`` (OpenAI's cap), only with ``allow_approx=True``:
  answers among the 20 are exact, each missing one gets ``min(smallest listed p, leftover mass /
  missing answers)``; refused for a question with more than 20 answers (K+1 > 20).

The values are raw full-vocabulary probabilities (expected progress uses them unnormalised);
``renormalise=True`` divides each row by its sum, as the local scorer does. An answer missing from
a response (outside ``approx-top20``), a malformed response, or a logprob that is not a number or
is positive is a :class:`~baglm_nb.models.questions.ScoringError` naming the segment and the
answer; it is never read as 0 (or as P = 1). A request that fails for good (server gone, wrong
key) is a :class:`~baglm_nb.models.openai_client.ServerError`, which stops the run. The scores'
``model_id`` is ``"openai:<model>, <strategy>"``, so the cache folder records the strategy, and
its :attr:`~ServedScorer.fingerprint` digests the name, what ``/v1/models`` reports about the
model (:func:`~baglm_nb.models.fingerprints.served_metadata`) and the strategy; after each batch
of segments the scorer asks again, and a server that changed model stops the run
(:class:`~baglm_nb.models.openai_client.ServerError`) before that batch is stored.

Exports :class:`ServedScorer`, :data:`STRATEGIES`, :data:`SERVED`, :data:`CONNECTION`,
:func:`guess_family`, :func:`user_content`, :func:`encode_png`, and :func:`is_served` /
:func:`served_name`, the one rule for model strings ``openai:<name>``.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from baglm_nb.inputs.urls import redact_url
from baglm_nb.models.families import DEFAULT_SYSTEM
from baglm_nb.models.fingerprints import served_fingerprint, served_metadata
from baglm_nb.models.openai_client import ConnectionOptions, ServerError
from baglm_nb.models.prompts import option_labels
from baglm_nb.models.questions import Question, ScoringError, build_questions
from baglm_nb.models.served_checks import PROBE_QUESTION, listed_refusal
from baglm_nb.models.served_labels import forced_logprob, forced_options, single_token
from baglm_nb.models.served_messages import (
    encode_png,
    guess_family,
    served_frames,
    served_pixels,
    user_content,
)
from baglm_nb.models.served_probe import (
    MalformedResponse,
    canary,
    check_logprobs,
    labels_refusal,
    refused_or_raise,
    untrustworthy,
)
from baglm_nb.models.served_responses import (
    _check_logprob,
    _top_logprobs,
    answer_probs,
    prompt_logprob,
)

if TYPE_CHECKING:
    from baglm_nb.models.engine import ScoreResult

__all__ = [
    "APPROX_TOP",
    "CONNECTION",
    "SERVED",
    "STRATEGIES",
    "ServedScorer",
    "encode_png",
    "guess_family",
    "is_served",
    "served_name",
    "user_content",
]

STRATEGIES: tuple[str, ...] = ("labels", "full-vocab", "prompt-logprobs", "approx-top20")
"""How answer probabilities are read, in order of preference (see the module docs)."""
APPROX_TOP = 20
"""``top_logprobs`` of the ``approx-top20`` strategy (the OpenAI API's cap)."""
SERVED = "served"
"""The ``label`` of served scores (the weights behind a server cannot be checked from here)."""
CONNECTION = ConnectionOptions(timeout=120.0)
"""The default connection of a served scorer: the OpenAI API, 120 s per request (a request
carries a segment's images)."""
PREFIX = "openai:"
"""Model-id prefix of served scores (``openai:<model>, <strategy>``)."""


def is_served(model: str) -> bool:
    """Whether a model string (``--model``, a cache's model id) names a model behind an
    OpenAI-compatible server: ``openai:<name>``."""
    return model.startswith(PREFIX)


def served_name(model: str) -> str:
    """The name a server knows a model string by: ``openai:<name>`` without its prefix (any
    other string unchanged, e.g. ``--backend openai --model <name>``)."""
    return model.removeprefix(PREFIX)


_PREFILL = {"prompt_logprobs": 0, "add_generation_prompt": False, "continue_final_message": True}
"""vLLM's extension: score the prefilled assistant answer as part of the prompt."""
_DEFAULT = object()


def _frames(frames_batch: Any) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 numpy (torch tensors are converted; grey frames expanded)."""
    x = np.asarray(frames_batch)
    if x.dtype != np.uint8:
        raise ValueError(f"frames_batch must be uint8, got {x.dtype}")
    if x.ndim != 5 or x.shape[2] not in (1, 3):
        raise ValueError(f"frames_batch must be (S, F, 3, H, W), got shape {x.shape}")
    return np.repeat(x, 3, axis=2) if x.shape[2] == 1 else x


class ServedScorer:
    """An LMM behind an OpenAI-compatible chat-completions server, as a :class:`Scorer`.

    Parameters
    ----------
    model
        Model name sent to the server (``openai:<model>, <strategy>`` is the scores' model id).
    family
        A family of :data:`~baglm_nb.models.families.FAMILIES`: the layout and size of the
        frames and the system message; default :func:`guess_family` of ``model``.
    connection
        The server, the NAME of the environment variable holding its key, the seconds per
        request and the retry rules (:class:`~baglm_nb.models.openai_client.ConnectionOptions`;
        default :data:`CONNECTION`).
    strategy
        ``"auto"`` (probe the server once) or one of :data:`STRATEGIES`.
    allow_approx
        Accept ``"approx-top20"`` (explicitly or as ``"auto"``'s last resort).
    top_logprobs
        ``top_logprobs`` of ``"full-vocab"``; default the vocabulary size from ``/v1/models``
        (llama.cpp), else ``-1`` (vLLM: all, with ``--max-logprobs -1``).
    concurrency
        Requests in flight at once.
    tokenizer
        Optional tokenizer of the served model for the tokenizer-aware option labels (§2.2); by
        default the plain Excel labels A, B, ..., Z, AA, ... (each must be one token on the
        server, which the responses check).
    system_message
        System turn; default :data:`~baglm_nb.models.families.DEFAULT_SYSTEM` of the family.
    cache_prompt
        llama.cpp's ``cache_prompt``, sent on every request to a llama.cpp server (its
        ``/v1/models`` says ``owned_by: llamacpp``): reuse the slot's cached prefix, so the
        answers of one question cost one prefill (default). False evaluates every prompt whole:
        slower, and its logprobs do not depend on what the slot held before (with the cache,
        the last token computed alone moves a logprob slightly; the README gives how much).
    pixels
        (min, max) pixels per frame of the processor size the frames are resized to before
        they are sent (:func:`~baglm_nb.models.served_messages.served_frames`); default the
        family spec's ``served_pixels`` (Qwen2.5-VL: the published bounds; InternVL: one
        448x448 tile; LLaVA-OneVision: 384x384); ``None`` sends the decoded frames as they are.
    client
        An ``openai.OpenAI``-like client to use instead (tests).
    """

    def __init__(
        self,
        model: str,
        *,
        family: str | None = None,
        connection: ConnectionOptions = CONNECTION,
        strategy: str = "auto",
        allow_approx: bool = False,
        top_logprobs: int | None = None,
        concurrency: int = 1,
        tokenizer: Any = None,
        system_message: Any = _DEFAULT,
        cache_prompt: bool = True,
        pixels: Any = _DEFAULT,
        client: Any = None,
    ) -> None:
        if strategy not in ("auto", *STRATEGIES):
            raise ValueError(f"strategy must be 'auto' or one of {STRATEGIES}, got {strategy!r}")
        if strategy == "approx-top20" and not allow_approx:
            raise ValueError(
                "strategy 'approx-top20' approximates missing answers: pass --allow-approx"
            )
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model = model
        self.family = family or guess_family(model)
        if self.family not in DEFAULT_SYSTEM:
            raise ValueError(f"unknown family {self.family!r}; use one of {sorted(DEFAULT_SYSTEM)}")
        self.system_message = (
            DEFAULT_SYSTEM[self.family] if system_message is _DEFAULT else system_message
        )
        self.allow_approx = bool(allow_approx)
        self.concurrency = int(concurrency)
        self.tokenizer = tokenizer
        self.label = SERVED
        self._strategy = strategy
        self._top = top_logprobs
        self._conn = connection.connect(client)
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self._token_ids: dict[str, int] = {}
        self._served: dict[str, Any] | None = None  # what /v1/models says about the model
        self._record: dict[str, Any] | None = None
        self._checked = False
        self._listed_memo: dict[str, tuple[list[dict], list[tuple[str, float]]]] = {}
        self.strategy_reason = "" if strategy == "auto" else "asked for"
        self.cache_prompt = bool(cache_prompt)
        self.pixels = served_pixels(self.family) if pixels is _DEFAULT else pixels
        self.stats = {"encode_s": 0.0, "request_s": 0.0, "requests": 0, "bytes": 0}

    def __repr__(self) -> str:
        return (
            f"ServedScorer({self.model!r}, family={self.family!r}, "
            f"base_url={redact_url(self._conn.base_url or '')!r}, strategy={self._strategy!r})"
        )

    @property
    def model_id(self) -> str:
        """``"openai:<model>, <strategy>"`` (resolves ``"auto"`` by probing the server)."""
        return f"{PREFIX}{self.model}, {self.strategy}"

    @property
    def strategy(self) -> str:
        """The probability strategy in use (``"auto"`` is resolved on first use, and
        ``"labels"`` checked: :class:`ServerError` naming the server's answer when it is not
        exact on this server)."""
        with self._probe_lock:
            if not self._checked:
                check_logprobs(self)  # any strategy: a server whose logprobs are false
                self._checked = True
            if self._strategy == "auto":
                self._strategy, self.strategy_reason = self._probe()
                print(
                    f"served scoring: strategy {self._strategy} ({self.strategy_reason})",
                    file=sys.stderr,
                    flush=True,
                )
            elif self._strategy == "labels" and self.strategy_reason == "asked for":
                why = labels_refusal(self)
                if why:
                    raise ServerError(f"{self._conn.where} cannot use --strategy labels: {why}")
                self.strategy_reason = "asked for; the probe found it exact"
        return self._strategy

    @property
    def fingerprint(self) -> str:
        """The model name, what ``/v1/models`` reports about it, and the strategy, digested."""
        strategy = self.strategy
        return served_fingerprint(self.model, self._metadata(), strategy)

    def _metadata(self) -> dict[str, Any]:
        """:func:`served_metadata` of ``/v1/models``, fetched once (``{}`` without it)."""
        if self._served is None:
            self._served = self._fetch_metadata()
        return self._served

    def _fetch_metadata(self) -> dict[str, Any]:
        """What ``/v1/models`` says now (``{}`` where the server has no such route); llama.cpp's
        slot context ``n_ctx`` is dropped (a launch setting, not the weights)."""
        try:
            raw = self._conn.call(lambda c: c.models.with_raw_response.list())
            meta = served_metadata(json.loads(raw.content), self.model)
        except ServerError as exc:
            refused_or_raise(exc, self._conn.where)
            return {}
        except (ValueError, AttributeError, TypeError):
            return {}
        if isinstance(meta.get("meta"), dict):
            meta["meta"] = {k: v for k, v in meta["meta"].items() if k != "n_ctx"}
        return meta

    def check_same_model(self) -> None:
        """:class:`ServerError` when ``/v1/models`` now describes another model than at the
        start (the server was restarted with other weights)."""
        before = self._metadata()
        now = self._fetch_metadata()
        if now != before:
            raise ServerError(
                f"{self._conn.where} changed model during the run: /v1/models said "
                f"{json.dumps(before)[:200]} at the start, now {json.dumps(now)[:200]}; the "
                "batch being scored is not stored"
            )

    def labels(self, n: int) -> list[str]:
        """The ``n`` option labels (§2.2; tokenizer-aware when a tokenizer was given)."""
        return option_labels(n, self.tokenizer)

    # -- requests -----------------------------------------------------------------------
    def messages(self, question: str, images: Sequence[str] = ()) -> list[dict]:
        """The chat messages of one question about a segment given as image URLs."""
        msgs: list[dict] = []
        if self.system_message:
            msgs.append({"role": "system", "content": self.system_message})
        msgs.append({"role": "user", "content": user_content(self.family, question, images)})
        return msgs

    def _post(self, messages: list[dict], **options: Any) -> dict:
        """One chat completion (first token only) as parsed JSON; ``ServerError`` on failure."""
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0}
        if self._metadata().get("owned_by") == "llamacpp":
            options["extra_body"] = {
                **options.get("extra_body", {}),
                "cache_prompt": self.cache_prompt,
            }
        t0 = time.perf_counter()
        try:
            raw = self._conn.call(
                lambda c: c.chat.completions.with_raw_response.create(**body, **options)
            )
        except ServerError as exc:
            if exc.status == 404:  # the chat route exists on every server: the model does not
                raise self._conn.model_not_found(self.model, exc) from None
            raise
        try:
            data = json.loads(raw.content)
        except (ValueError, TypeError):
            raise MalformedResponse("malformed response: not JSON") from None
        if not isinstance(data, dict):
            raise MalformedResponse("malformed response: not a JSON object")
        with self._lock:
            self.stats["request_s"] += time.perf_counter() - t0
            self.stats["requests"] += 1
            self.stats["bytes"] += len(raw.content)
        return data

    def _root_post(self, path: str, body: dict) -> Any:
        """POST to a route at the server's root (outside ``/v1``), as parsed JSON."""
        import httpx

        if not self._conn.base_url:
            raise ServerError("the OpenAI API has no /tokenize route: pass --tokenizer", False, 404)
        url = self._conn.base_url.rstrip("/").removesuffix("/v1") + path
        raw = self._conn.call(lambda c: c.post(url, cast_to=httpx.Response, body=body))
        try:
            return json.loads(raw.content)
        except (ValueError, TypeError):
            raise ScoringError(f"malformed response from {path}: not JSON") from None

    def token_id(self, answer: str) -> int:
        """The one token id of an answer label (``tokenizer``, else the server's ``/tokenize``:
        llama.cpp's ``content`` or vLLM's ``prompt``); :class:`ScoringError` with the ids when
        it is several tokens."""
        with self._lock:
            if answer in self._token_ids:
                return self._token_ids[answer]
        if self.tokenizer is not None:
            ids = self.tokenizer(answer, add_special_tokens=False)["input_ids"]
        else:
            body = {
                "content": answer,
                "prompt": answer,
                "model": self.model,
                "add_special_tokens": False,
            }
            ids = self._root_post("/tokenize", body).get("tokens")
            ids = [t["id"] if isinstance(t, dict) else t for t in ids or []]
        tid = single_token(answer, ids)
        with self._lock:
            self._token_ids[answer] = tid
        return tid

    @property
    def weights_record(self) -> dict[str, Any]:
        """What the key's fingerprint stands for, stored beside the scores: what ``/v1/models``
        says and the :meth:`canary` (asked once per scorer)."""
        if self._record is None:
            self._record = {"served": self._metadata(), "canary": canary(self)}
        return self._record

    def _full_top(self) -> int:
        """``top_logprobs`` of the full-vocab strategy (see the class docs)."""
        with self._probe_lock:
            if self._top is None:
                self._top = self._vocab_size()
        return self._top

    def _vocab_size(self) -> int:
        """The vocabulary size from ``/v1/models`` (llama.cpp's ``meta.n_vocab``), else -1."""
        meta = self._metadata().get("meta")
        n = meta.get("n_vocab") if isinstance(meta, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) else -1

    def question_probs(self, question: Question, images: Sequence[str] = ()) -> np.ndarray:
        """P(answer) for each answer of ``question`` about one segment (images as URLs)."""
        msgs = self.messages(question.text, images)
        strategy = self.strategy
        if strategy == "labels":
            out = []
            for a in question.answers:
                data = self._post(msgs, **forced_options(self.token_id(a)))
                out.append(math.exp(_check_logprob(forced_logprob(data, a), a)))
            return np.array(out, dtype=np.float64)
        if strategy == "prompt-logprobs":
            out = []
            for a in question.answers:
                answer = {"role": "assistant", "content": a}
                data = self._post([*msgs, answer], extra_body=_PREFILL)
                out.append(math.exp(prompt_logprob(data, a)))
            return np.array(out, dtype=np.float64)
        approx = strategy == "approx-top20"
        top = APPROX_TOP if approx else self._full_top()
        data = self._post(msgs, logprobs=True, top_logprobs=top)
        return answer_probs(data, question.answers, approx=approx)

    def _probe(self) -> tuple[str, str]:
        """The best strategy this server supports, and why (a few tiny text requests)."""
        refused = labels_refusal(self)
        if refused is None:
            return "labels", "the probe found forced answers' logprobs exact"
        why = f"labels refused: {refused}"
        msgs = self.messages(PROBE_QUESTION)
        try:
            top = _top_logprobs(self._post(msgs, logprobs=True, top_logprobs=APPROX_TOP + 1))
            entries = [e for e in top if isinstance(e, dict)]
            listed = [
                (str(e.get("token")), _check_logprob(e.get("logprob"), "?", floor=False))
                for e in entries
            ]
            untrustworthy(self, listed_refusal(listed, "the text prompt"))
            if len(top) > APPROX_TOP:
                return "full-vocab", f"{why}; the server returns the whole vocabulary's logprobs"
        except (ServerError, ScoringError) as exc:
            refused_or_raise(exc, self._conn.where)
        try:
            answer = {"role": "assistant", "content": "A"}
            prompt_logprob(self._post([*msgs, answer], extra_body=_PREFILL), "A")
            return "prompt-logprobs", f"{why}; no full-vocabulary logprobs, but prompt_logprobs"
        except (ServerError, ScoringError) as exc:
            refused_or_raise(exc, self._conn.where)
        if self.allow_approx:
            return "approx-top20", f"{why}; at most {APPROX_TOP} logprobs, --allow-approx given"
        raise ServerError(
            f"{self._conn.where} returns at most {APPROX_TOP} top logprobs and no "
            "prompt_logprobs, so probabilities of answers outside its top 20 are unknown: serve "
            "the model with full logprobs (vLLM: --max-logprobs -1) or pass --allow-approx"
        )

    # -- scoring ------------------------------------------------------------------------
    def _encode(self, frames: np.ndarray) -> list[list[str]]:
        """Each segment's frames as PNG data URLs (timed in ``stats["encode_s"]``)."""
        t0 = time.perf_counter()
        out = [[encode_png(f) for f in seg] for seg in frames]
        with self._lock:
            self.stats["encode_s"] += time.perf_counter() - t0
        return out

    def score_segments(
        self,
        frames_batch: Any,
        goal: str,
        steps: Sequence[str],
        *,
        prompt: str | None = "vsg",
        progress: bool = True,
        vsg_prompt: Literal["multiple_choice", "binary"] = "multiple_choice",
        next_step: bool = False,
        renormalise: bool = False,
    ) -> ScoreResult:
        """Score S segments of one video, as
        :meth:`~baglm_nb.models.engine.TransformersScorer.score_segments` (same options).

        One request per (segment, question) (``prompt-logprobs``: per answer), ``concurrency``
        at a time. Raises :class:`~baglm_nb.models.questions.ScoringError` (a segment, or the
        call when K+1 > 20 under ``approx-top20``) or
        :class:`~baglm_nb.models.openai_client.ServerError` (the server failed for good).
        """
        frames = served_frames(self.family, _frames(frames_batch), self.pixels)
        steps = [str(s) for s in steps]
        labels = self.labels(len(steps) + 1) if steps else []
        questions, versions, vsg_kind = build_questions(
            goal,
            steps,
            labels,
            prompt=prompt,
            vsg_prompt=vsg_prompt,
            progress=progress,
            next_step=next_step,
        )
        widest = max(len(q.answers) for q in questions)
        if self.strategy == "approx-top20" and widest > APPROX_TOP:
            raise ScoringError(
                f"{widest} answers (K+1 options) but the approx-top20 strategy reads only "
                f"{APPROX_TOP} logprobs: refused (serve the model with full logprobs)"
            )
        from baglm_nb.models.engine import ScoreResult  # torch: not to check a command line

        images = self._encode(frames)
        probs = self._ask(questions, images)
        self.check_same_model()
        return ScoreResult.from_answers(
            self,
            questions,
            probs,
            vsg_kind=vsg_kind,
            labels=labels,
            versions=versions,
            vsg_prompt=vsg_prompt,
            renormalise=renormalise,
        )

    def _ask(self, questions: list[Question], images: list[list[str]]) -> list[np.ndarray]:
        """``(S, answers)`` probabilities per question, ``concurrency`` requests at a time."""
        names = _question_names(questions)
        jobs = [(s, q) for s in range(len(images)) for q in range(len(questions))]

        def one(job: tuple[int, int]) -> np.ndarray:
            s, q = job
            try:
                return self.question_probs(questions[q], images[s])
            except ScoringError as exc:
                raise ScoringError(f"{names[q]}: {exc.message}", s) from None

        out = [np.empty((len(images), len(q.answers))) for q in questions]
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [pool.submit(one, job) for job in jobs]
            try:
                for (s, q), f in zip(jobs, futures, strict=True):
                    out[q][s] = f.result()
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
        return out


def _question_names(questions: Sequence[Question]) -> list[str]:
    """``"the progress question of step 2"`` etc., for error messages."""
    seen: dict[str, int] = {}
    names = []
    for q in questions:
        n = seen[q.kind] = seen.get(q.kind, 0) + 1
        names.append(
            {
                "vsg": "the VSG question",
                "next": "the next-step question",
                "bin": f"the binary VSG question of step {n}",
                "prog": f"the progress question of step {n}",
            }[q.kind]
        )
    return names
