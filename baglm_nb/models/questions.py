"""The questions every scorer asks about a segment, and how their answers become scores.

Shared by the local scorer (:class:`baglm_nb.models.engine.TransformersScorer`) and the served
one (:class:`baglm_nb.models.served.ServedScorer`), so that both ask the same questions and
combine the answer probabilities by the same rules (reference-protocol §2, §3):

* :func:`build_questions`: the VSG question (multiple choice over the K+1 option labels, or K
  binary Yes/No questions), the K progress questions (digits "0".."9") and the optional
  next-step question, each with the answer strings whose first-token probabilities are read;
* :func:`combine`: the probabilities of those answers as the ``vsg`` ``(S, K+1)``, ``progress``
  ``(S, K, 10)`` and ``next_step`` ``(S, K+1)`` arrays, raw or renormalised;
* :class:`ScoringError`: a segment (or a whole video) that cannot be scored, e.g. an answer token
  missing from a server's response; :func:`baglm_nb.models.scoring.score_video` adds the video
  and the segment's index, and the video is recorded in ``failures.json``.

No torch here: the served scorer runs on a machine without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from baglm_nb.models.prompts import DIGITS, format_choices, get_prompt

__all__ = ["YES_NO", "Question", "ScoringError", "build_questions", "combine"]

YES_NO: tuple[str, str] = ("Yes", "No")
"""Answers of the binary VSG question (the paper's appendix)."""


class Question(NamedTuple):
    """One question about a segment.

    Attributes
    ----------
    kind
        ``"vsg"`` (multiple choice), ``"bin"`` (binary VSG, one per step), ``"prog"`` (one per
        step) or ``"next"``.
    text
        The question text (a registered prompt, filled in).
    answers
        The answer strings read at the first generated token, in column order: the K+1 option
        labels (none last), ``("Yes", "No")`` or the ten digits.
    """

    kind: str
    text: str
    answers: tuple[str, ...]


class ScoringError(ValueError):
    """Scores of a segment (``segment`` = its index in the call, ``None`` = all of them) that
    cannot be produced; :meth:`located` names the video and the segment in the message."""

    #: A model or server that answers with something unusable is a failed run (exit 1 in the
    #: CLI, :mod:`baglm_nb.apps.cli.main`), not bad input.
    failed_run = True

    def __init__(self, message: str, segment: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.segment = segment

    def located(self, video: str, first_segment: int, segment_duration: float) -> ScoringError:
        """The same error, naming ``video`` and the segment's index in the video."""
        if self.segment is None:
            where = f"video {video!r}"
        else:
            n = first_segment + self.segment
            t0 = n * segment_duration
            where = f"video {video!r}, segment {n} ({t0:g}-{t0 + segment_duration:g} s)"
        return ScoringError(f"{where}: {self.message}", None)


def build_questions(
    goal: str,
    steps: Sequence[str],
    labels: Sequence[str],
    *,
    prompt: str | None,
    vsg_prompt: str,
    progress: bool,
    next_step: bool,
) -> tuple[list[Question], dict[str, str], str | None]:
    """The questions to ask, the prompt versions (for cache keys) and the VSG kind.

    Parameters
    ----------
    goal, steps
        The task goal and its K steps, in column order.
    labels
        The K+1 option labels (§2.2), none last.
    prompt
        Registry key of the VSG question; ``None`` skips VSG. ``"vsg"`` means ``"vsg_binary"``
        when ``vsg_prompt="binary"``.
    vsg_prompt
        ``"multiple_choice"`` or ``"binary"``.
    progress, next_step
        Also ask the K progress questions / the next-step question.

    Returns
    -------
    questions, versions, vsg_kind
        ``vsg_kind`` is ``"vsg"``, ``"bin"`` or ``None`` (no VSG).
    """
    steps = [str(s) for s in steps]
    if not steps:
        raise ValueError("steps is empty")
    if vsg_prompt not in ("multiple_choice", "binary"):
        raise ValueError(f"vsg_prompt must be 'multiple_choice' or 'binary', got {vsg_prompt!r}")
    vsg_kind = None if prompt is None else ("vsg" if vsg_prompt == "multiple_choice" else "bin")
    labels = tuple(labels)
    choices = format_choices(steps, labels)
    questions: list[Question] = []
    versions: dict[str, str] = {}
    if vsg_kind == "vsg":
        p = get_prompt(prompt)
        questions.append(Question("vsg", p.format(goal=goal, choices=choices), labels))
        versions["vsg"] = p.version
    elif vsg_kind == "bin":
        p = get_prompt("vsg_binary" if prompt == "vsg" else prompt)
        questions += [Question("bin", p.format(goal=goal, step=s), YES_NO) for s in steps]
        versions["vsg"] = p.version
    if progress:
        p = get_prompt("prog")
        questions += [Question("prog", p.format(goal=goal, step=s), DIGITS) for s in steps]
        versions["prog"] = p.version
    if next_step:
        p = get_prompt("next")
        questions.append(Question("next", p.format(goal=goal, choices=choices), labels))
        versions["next"] = p.version
    if not questions:
        raise ValueError("nothing to score: prompt=None, progress=False, next_step=False")
    return questions, versions, vsg_kind


def _renormalised(p: np.ndarray) -> np.ndarray:
    """Each row divided by its sum over the options."""
    return p / p.sum(-1, keepdims=True)


def combine(
    questions: Sequence[Question],
    probs: Sequence[np.ndarray],
    vsg_kind: str | None,
    *,
    renormalise: bool,
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(vsg, progress, next_step)`` from the answer probabilities of each question.

    ``probs[q]`` is ``(S, len(questions[q].answers))``. Raw values are returned as they are
    (full-vocabulary probabilities, as published); ``renormalise=True`` divides each row by its
    sum over the options (digits; Yes+No for binary). With the binary prompt, VSG column k is
    P("Yes" | step k) and the none column is ``1 - max_k`` of them (our choice; the paper does
    not define it). Arrays not asked for are ``None``.
    """
    by_kind: dict[str, list[np.ndarray]] = {}
    for q, p in zip(questions, probs, strict=True):
        by_kind.setdefault(q.kind, []).append(np.asarray(p, dtype=np.float64))
    take = {kind: np.stack(ps, axis=1) for kind, ps in by_kind.items()}
    norm = _renormalised if renormalise else (lambda x: x)
    vsg = None
    if vsg_kind == "vsg":
        vsg = norm(take["vsg"][:, 0])
    elif vsg_kind == "bin":
        yn = take["bin"]  # (S, K, 2)
        yes = yn[..., 0] / yn.sum(-1) if renormalise else yn[..., 0]
        vsg = np.concatenate([yes, 1.0 - yes.max(-1, keepdims=True)], axis=1)
    progress = norm(take["prog"]) if "prog" in take else None
    next_step = norm(take["next"][:, 0]) if "next" in take else None
    return vsg, progress, next_step
