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
see the README's fidelity notes). The server renders the model's own chat template and resizes
the images with its own preprocessing.

**Probabilities** (``strategy``), in order of preference (``"auto"`` probes the server once):

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
``model_id`` is ``"openai:<model>, <strategy>"``, so the cache folder records the strategy.

Exports :class:`ServedScorer`, :data:`STRATEGIES`, :data:`SERVED`, :func:`guess_family`,
:func:`user_content` and :func:`encode_png`.
"""

from __future__ import annotations

import base64
import io
import json
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from baglm_nb.models.engine import ScoreResult
from baglm_nb.models.families import DEFAULT_SYSTEM
from baglm_nb.models.logprobs import InvalidLogprob, checked_logprob
from baglm_nb.models.openai_client import Connection, ServerError
from baglm_nb.models.prompts import option_labels
from baglm_nb.models.questions import Question, ScoringError, build_questions, combine

__all__ = [
    "APPROX_TOP",
    "SERVED",
    "STRATEGIES",
    "ServedScorer",
    "encode_png",
    "guess_family",
    "user_content",
]

STRATEGIES: tuple[str, ...] = ("full-vocab", "prompt-logprobs", "approx-top20")
"""How answer probabilities are read, in order of preference (see the module docs)."""
APPROX_TOP = 20
"""``top_logprobs`` of the ``approx-top20`` strategy (the OpenAI API's cap)."""
SERVED = "served"
"""The ``label`` of served scores (the weights behind a server cannot be checked from here)."""
PREFIX = "openai:"
"""Model-id prefix of served scores (``openai:<model>, <strategy>``)."""

_FAMILY_HINTS = (
    ("internvl", "internvl"),
    ("qwen2.5-vl", "qwen2_5_vl"),
    ("qwen2_5_vl", "qwen2_5_vl"),
    ("qwen2.5vl", "qwen2_5_vl"),
    ("llava-onevision", "llava_onevision"),
    ("llava_onevision", "llava_onevision"),
)
_PROBE_QUESTION = "Answer with the letter A.\n"
_PREFILL = {"prompt_logprobs": 0, "add_generation_prompt": False, "continue_final_message": True}
"""vLLM's extension: score the prefilled assistant answer as part of the prompt."""
_DEFAULT = object()


def guess_family(model: str) -> str:
    """The LMM family of a served model name (``"Qwen/Qwen2.5-VL-7B-Instruct"`` ->
    ``"qwen2_5_vl"``); ``ValueError`` asking for ``--family`` when the name does not tell."""
    name = model.lower()
    for hint, family in _FAMILY_HINTS:
        if hint in name:
            return family
    raise ValueError(
        f"cannot tell the model family of {model!r} from its name; pass --family "
        "(internvl, qwen2_5_vl or llava_onevision)"
    )


def encode_png(frame: np.ndarray) -> str:
    """A ``(3, H, W)`` uint8 frame as a ``data:image/png;base64,...`` URL (lossless)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))).save(
        buf, format="PNG", compress_level=1
    )
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def user_content(family: str, question: str, images: Sequence[str]) -> str | list[dict]:
    """The user turn's content: the frames as images in the family's published order and count.

    InternVL: ``"Frame1: " <image> "\\nFrame2: " <image> ... "\\n" question`` (§8.1);
    Qwen2.5-VL: the images, then the question (§8.2's video-first order); LLaVA-OneVision: the
    images, then ``"\\n" + question`` (``"<image>\\n" + question``, §8.3). Without images, the
    question as a string.
    """
    if not images:
        return question

    def image(url: str) -> dict:
        return {"type": "image_url", "image_url": {"url": url}}

    parts: list[dict] = []
    if family.startswith("internvl"):
        for i, url in enumerate(images):
            parts += [{"type": "text", "text": ("\n" if i else "") + f"Frame{i + 1}: "}, image(url)]
        return [*parts, {"type": "text", "text": "\n" + question}]
    parts = [image(url) for url in images]
    text = "\n" + question if family == "llava_onevision" else question
    return [*parts, {"type": "text", "text": text}]


def _check_logprob(value: Any, answer: str) -> float:
    """A logprob as a float; ``ScoringError`` when it is not a finite number <= 0
    (:func:`baglm_nb.models.logprobs.checked_logprob`, the one rule)."""
    try:
        return checked_logprob(value, what=f"the server's logprob of answer {answer!r}")
    except InvalidLogprob as exc:
        raise ScoringError(str(exc)) from None


def _top_logprobs(response: dict) -> list[dict]:
    """The first generated token's ``top_logprobs`` list; ``ScoringError`` when absent."""
    try:
        top = response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    except (KeyError, IndexError, TypeError):
        top = None
    if not isinstance(top, list) or not top:
        raise ScoringError(
            "malformed response: no choices[0].logprobs.content[0].top_logprobs (does the "
            "server return logprobs?)"
        )
    return top


def _entry_key(entry: Any) -> bytes | None:
    """The exact bytes of a ``top_logprobs`` entry's token (``bytes``, else ``token``)."""
    if not isinstance(entry, dict):
        return None
    raw = entry.get("bytes")
    if isinstance(raw, list):
        try:
            return bytes(raw)
        except (TypeError, ValueError):
            return None
    token = entry.get("token")
    return token.encode("utf-8") if isinstance(token, str) else None


def answer_probs(response: dict, answers: Sequence[str], *, approx: bool = False) -> np.ndarray:
    """P(answer) for each answer from a chat response's first-token ``top_logprobs``.

    An answer matches the entry whose token bytes equal the answer's UTF-8 bytes (exactly one).
    Without ``approx`` a missing answer raises :class:`ScoringError`; with it, a missing answer
    gets ``min(smallest listed p, leftover mass / number missing)``.
    """
    top = _top_logprobs(response)
    wanted = {a.encode("utf-8"): a for a in answers}
    found: dict[str, float] = {}
    listed: list[float] = []
    for entry in top:
        key = _entry_key(entry)
        if key is None:
            raise ScoringError(f"malformed top_logprobs entry {str(entry)[:80]!r}")
        if approx:
            listed.append(
                math.exp(_check_logprob(entry.get("logprob"), key.decode(errors="replace")))
            )
        if key in wanted:
            a = wanted[key]
            if a in found:
                raise ScoringError(f"answer {a!r} matches two entries of the server's logprobs")
            found[a] = math.exp(_check_logprob(entry.get("logprob"), a))
    missing = [a for a in answers if a not in found]
    if missing and not approx:
        raise ScoringError(
            f"answer {missing[0]!r} is not among the {len(top)} logprobs the server returned "
            f"(missing: {missing}); it is never read as 0"
        )
    if missing:
        leftover = max(0.0, 1.0 - sum(listed)) / len(missing)
        fill = min(min(listed), leftover)
        found.update(dict.fromkeys(missing, fill))
    return np.array([found[a] for a in answers], dtype=np.float64)


def prompt_logprob(response: dict, answer: str) -> float:
    """The logprob of the prefilled ``answer``: the last ``prompt_logprobs`` position (vLLM)."""
    plp = response.get("prompt_logprobs") if isinstance(response, dict) else None
    last = plp[-1] if isinstance(plp, list) and plp else None
    if not isinstance(last, dict) or not last:
        raise ScoringError("malformed response: no prompt_logprobs for the last prompt token")
    entries = [e for e in last.values() if isinstance(e, dict)]
    hits = [e for e in entries if e.get("decoded_token") == answer]
    if len(hits) != 1:
        seen = [e.get("decoded_token") for e in entries]
        raise ScoringError(
            f"the last prompt token is not the prefilled answer {answer!r} alone (got {seen!r});"
            " the chat template merged it with the text before it: use --strategy full-vocab"
        )
    return _check_logprob(hits[0].get("logprob"), answer)


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
        ``"internvl"``, ``"qwen2_5_vl"`` or ``"llava_onevision"``: the layout of the frames and
        the system message; default :func:`guess_family` of ``model``.
    base_url, api_key_env, timeout, max_attempts, backoff, max_backoff
        The server, the NAME of the environment variable holding its key, and the retry rules
        (:class:`~baglm_nb.models.openai_client.Connection`).
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
    client
        An ``openai.OpenAI``-like client to use instead (tests).
    """

    def __init__(
        self,
        model: str,
        *,
        family: str | None = None,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        strategy: str = "auto",
        allow_approx: bool = False,
        top_logprobs: int | None = None,
        concurrency: int = 1,
        timeout: float = 120.0,
        max_attempts: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 20.0,
        tokenizer: Any = None,
        system_message: Any = _DEFAULT,
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
        self._conn = Connection(
            base_url, api_key_env, timeout=timeout, max_attempts=max_attempts, backoff=backoff,
            max_backoff=max_backoff, client=client,
        )  # fmt: skip
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()
        self.stats = {"encode_s": 0.0, "request_s": 0.0, "requests": 0}

    def __repr__(self) -> str:
        return (
            f"ServedScorer({self.model!r}, family={self.family!r}, "
            f"base_url={self._conn.base_url!r}, strategy={self._strategy!r})"
        )

    @property
    def model_id(self) -> str:
        """``"openai:<model>, <strategy>"`` (resolves ``"auto"`` by probing the server)."""
        return f"{PREFIX}{self.model}, {self.strategy}"

    @property
    def strategy(self) -> str:
        """The probability strategy in use (``"auto"`` is resolved on first use)."""
        with self._probe_lock:
            if self._strategy == "auto":
                self._strategy = self._probe()
        return self._strategy

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
        t0 = time.perf_counter()
        raw = self._conn.call(
            lambda c: c.chat.completions.with_raw_response.create(**body, **options)
        )
        try:
            data = json.loads(raw.content)
        except (ValueError, TypeError):
            raise MalformedResponse("malformed response: not JSON") from None
        if not isinstance(data, dict):
            raise MalformedResponse("malformed response: not a JSON object")
        with self._lock:
            self.stats["request_s"] += time.perf_counter() - t0
            self.stats["requests"] += 1
        return data

    def _full_top(self) -> int:
        """``top_logprobs`` of the full-vocab strategy (see the class docs)."""
        with self._probe_lock:
            if self._top is None:
                self._top = self._vocab_size()
        return self._top

    def _vocab_size(self) -> int:
        """The vocabulary size from ``/v1/models`` (llama.cpp's ``meta.n_vocab``), else -1."""
        n = -1
        try:
            raw = self._conn.call(lambda c: c.models.with_raw_response.list())
            for entry in json.loads(raw.content).get("data", []):
                meta = entry.get("meta") or {}
                if isinstance(meta.get("n_vocab"), int):
                    n = meta["n_vocab"]
        except (ServerError, ValueError, AttributeError, TypeError):
            pass
        return n

    def question_probs(self, question: Question, images: Sequence[str] = ()) -> np.ndarray:
        """P(answer) for each answer of ``question`` about one segment (images as URLs)."""
        msgs = self.messages(question.text, images)
        strategy = self.strategy
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

    def _probe(self) -> str:
        """The best strategy this server supports (one or two tiny text requests)."""
        msgs = self.messages(_PROBE_QUESTION)
        try:
            data = self._post(msgs, logprobs=True, top_logprobs=APPROX_TOP + 1)
            if len(_top_logprobs(data)) > APPROX_TOP:
                return "full-vocab"
        except (ServerError, ScoringError) as exc:
            _refused_or_raise(exc, self._conn.where)
        try:
            answer = {"role": "assistant", "content": "A"}
            prompt_logprob(self._post([*msgs, answer], extra_body=_PREFILL), "A")
            return "prompt-logprobs"
        except (ServerError, ScoringError) as exc:
            _refused_or_raise(exc, self._conn.where)
        if self.allow_approx:
            return "approx-top20"
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
        frames = _frames(frames_batch)
        steps = [str(s) for s in steps]
        labels = self.labels(len(steps) + 1) if steps else []
        questions, versions, vsg_kind = build_questions(
            goal, steps, labels, prompt=prompt, vsg_prompt=vsg_prompt, progress=progress,
            next_step=next_step,
        )  # fmt: skip
        widest = max(len(q.answers) for q in questions)
        if self.strategy == "approx-top20" and widest > APPROX_TOP:
            raise ScoringError(
                f"{widest} answers (K+1 options) but the approx-top20 strategy reads only "
                f"{APPROX_TOP} logprobs: refused (serve the model with full logprobs)"
            )
        images = self._encode(frames)
        probs = self._ask(questions, images)
        vsg, prog, nxt = combine(questions, probs, vsg_kind, renormalise=renormalise)
        return ScoreResult(
            vsg=vsg, progress=prog, next_step=nxt, labels=tuple(labels), model_id=self.model_id,
            label=self.label, family=self.family, vsg_prompt=vsg_prompt,
            renormalised=bool(renormalise), prompt_versions=versions,
        )  # fmt: skip

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


class MalformedResponse(ScoringError):
    """An answer that is no chat completion at all (not JSON, or not a JSON object)."""


def _refused_or_raise(exc: Exception, where: str) -> None:
    """Go on probing when the server refused a request (HTTP 400/404/422) or answered without
    the field asked for; raise anything else (server down, wrong key, an answer that is no
    chat completion: a :class:`ServerError` naming the server ``where``)."""
    if isinstance(exc, ServerError) and exc.status not in (400, 404, 422):
        raise exc
    if isinstance(exc, MalformedResponse):
        raise ServerError(f"{where} answered the probe with a {exc.message}; is it an "
                          "OpenAI-compatible server (check --base-url)?") from None  # fmt: skip


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
            }[q.kind]  # fmt: skip
        )
    return names
