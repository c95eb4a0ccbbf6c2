"""Prompt texts, prompt versions and multiple-choice option labels (reference-protocol §2-§4).

Every prompt is a :class:`Prompt` with a ``version`` string (e.g. ``"vsg-v1"``) that becomes part
of the cache keys of the scores it produced. :data:`PROMPTS`, a read-only table built once by
:func:`prompt_table` (which refuses a version shared by two texts), maps short keys to prompts:

========== ============= ===================================================================
key        version       text
========== ============= ===================================================================
vsg        vsg-v1        multiple-choice VSG question, §2.1 (``prompts/vsg/question.txt``)
prog       prog-v1       progress rating 0-9, §3.1 (``prompts/prog/question.txt``)
prereq_sys prereq-sys-v1 LLM system message for prerequisites, §4.1
prereq     prereq-v1     LLM prerequisite question, §4.1
vsg_binary vsg-bin-v1    binary VSG question, paper appendix (π_VSG^bin)
next       next-v1       next-step multiple-choice question, paper appendix (π_next)
========== ============= ===================================================================

The first four texts are the published prompt files verbatim, trailing newline included (the
files are read with ``f.read()`` and no template trims the newline). The published code has **no
file** for the binary VSG prompt nor for the next-step prompt: their texts here are transcribed
from the paper's appendix boxes (LaTeX ``\\\\`` and ``\\\\[1ex]`` line breaks -> ``"\\n"``, an empty
box line -> an empty line, ````Yes''`` -> ``"Yes"``), and given the same trailing newline as
the published files, for consistency. That trailing newline is our choice, not the paper's.

Option labels follow §2.2: Excel-style labels (A..Z, AA, AB, ...) filtered by the tokenizer so
that every kept label has a distinct first token; :func:`check_single_tokens` checks at run time
that labels and digits are single bare tokens (no SentencePiece ``"▁"`` / byte-level ``"Ġ"``
prefix), as §2.3 asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "DIGITS",
    "NONE_OPTION",
    "PROMPTS",
    "common_prefix_length",
    "Prompt",
    "check_single_tokens",
    "check_task_text",
    "excel_label",
    "first_token_id",
    "format_choices",
    "get_prompt",
    "option_labels",
    "prompt_table",
]

NONE_OPTION = "None of the above."
"""The extra last option of every multiple-choice question (§2.2)."""

DIGITS: tuple[str, ...] = tuple(str(d) for d in range(10))
"""The progress answers ``"0"`` .. ``"9"`` (§3.2)."""


@dataclass(frozen=True)
class Prompt:
    """One prompt template.

    Parameters
    ----------
    key
        Short registry name (``"vsg"``, ``"prog"``, ...).
    version
        Version string, part of every cache key (``"vsg-v1"``).
    text
        The template, with ``{name}`` fields filled by :meth:`format`.
    source
        Where the text comes from (published file or paper appendix).
    """

    key: str
    version: str
    text: str
    source: str

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the ``{fields}`` of the template, in order of first appearance."""
        import string

        out: list[str] = []
        for _, name, _, _ in string.Formatter().parse(self.text):
            if name is not None and name not in out:
                out.append(name)
        return tuple(out)

    def format(self, **values: str) -> str:
        """Fill the template; every field must be given, and no other.

        Raises
        ------
        ValueError
            On a missing or unknown field.
        """
        missing = [f for f in self.fields if f not in values]
        extra = sorted(set(values) - set(self.fields))
        if missing or extra:
            raise ValueError(
                f"prompt {self.key!r} ({self.version}) takes fields {list(self.fields)}; "
                f"missing {missing}, unknown {extra}"
            )
        return self.text.format(**values)


VSG_TEXT = (
    "You are watching a video segment of someone attempting to {goal}.\n"
    "What is the main action being performed in this exact moment?\n"
    "\n"
    "Options:\n"
    "{choices}\n"
    "\n"
    "Answer with only the letter label of the correct option "
    "(e.g., A, B, ..., Z, AA, AB, etc.), with no extra text.\n"
)

PROG_TEXT = (
    "You are watching a short video clip.\n"
    "\n"
    "The goal of the person in the video is: {goal}\n"
    "The specific action of interest is: {step}\n"
    "\n"
    "Rate how far along this action is in terms of execution progress, "
    "using a scale from 0 to 9:\n"
    "- 0 = the action is not present in this clip\n"
    "- 1 = the action is just beginning or about to begin\n"
    "- 5 = the action is halfway complete\n"
    "- 9 = the action is just finishing or about to finish\n"
    "\n"
    "Respond with a single number from 0 to 9. Do not include any other text.\n"
)

PREREQ_SYSTEM_TEXT = (
    "You are a procedural reasoning expert who determines whether one step must be completed "
    "before another in order to correctly perform a task. Always answer with a single word: "
    '"Yes" or "No".\n'
)

PREREQ_TEXT = (
    "You are performing the task: {goal}\n"
    "\n"
    "Is the following step strictly required before another?\n"
    "\n"
    "Prerequisite candidate: {step_b}\n"
    "Target step: {step_a}\n"
    "\n"
    'Answer "Yes" if the target step cannot be completed correctly without first completing '
    'the prerequisite step. Otherwise, answer "No".\n'
    "\n"
    "Answer:\n"
)

VSG_BINARY_TEXT = (
    "You are watching a video segment of someone attempting to {goal}.\n"
    'Is the person currently performing the action: "{step}"?\n'
    "\n"
    'Answer with "Yes" or "No" only.\n'
)

NEXT_TEXT = (
    "You are watching a video segment of someone attempting to {goal}.\n"
    "What is the most likely next step in the sequence?\n"
    "\n"
    "Options:\n"
    "{choices}\n"
    "\n"
    "Answer with only the letter label of the correct option "
    "(e.g., A, B, ..., Z, AA, AB, etc.), with no extra text.\n"
)

_PUBLISHED = "published file {} (reference-protocol {})"
_PAPER = "paper appendix box {}; no file in the published code"


def prompt_table(*prompts: Prompt) -> Mapping[str, Prompt]:
    """A read-only table of ``prompts`` by key.

    A new text needs a new version string, so that cache keys stay meaningful.

    Raises
    ------
    ValueError
        If two prompts share a key, or a version is used by two different texts.
    """
    table: dict[str, Prompt] = {}
    for prompt in prompts:
        if prompt.key in table:
            raise ValueError(f"prompt {prompt.key!r} is listed twice")
        for other in table.values():
            if other.version == prompt.version and other.text != prompt.text:
                raise ValueError(
                    f"version {prompt.version!r} of prompt {prompt.key!r} is already used by "
                    f"prompt {other.key!r}"
                )
        table[prompt.key] = prompt
    return MappingProxyType(table)


PROMPTS: Mapping[str, Prompt] = prompt_table(
    Prompt("vsg", "vsg-v1", VSG_TEXT, _PUBLISHED.format("prompts/vsg/question.txt", "§2.1")),
    Prompt("prog", "prog-v1", PROG_TEXT, _PUBLISHED.format("prompts/prog/question.txt", "§3.1")),
    Prompt(
        "prereq_sys",
        "prereq-sys-v1",
        PREREQ_SYSTEM_TEXT,
        _PUBLISHED.format("prompts/prereq/system.txt", "§4.1"),
    ),
    Prompt(
        "prereq",
        "prereq-v1",
        PREREQ_TEXT,
        _PUBLISHED.format("prompts/prereq/question.txt", "§4.1"),
    ),
    Prompt("vsg_binary", "vsg-bin-v1", VSG_BINARY_TEXT, _PAPER.format("pi_VSG^bin")),
    Prompt("next", "next-v1", NEXT_TEXT, _PAPER.format("pi_next")),
)
"""The prompts by key (read-only); the version of each is part of the cache keys."""


def get_prompt(key: str) -> Prompt:
    """The registered prompt ``key``; a clear :class:`KeyError` otherwise."""
    try:
        return PROMPTS[key]
    except KeyError:
        raise KeyError(f"unknown prompt {key!r}; registered: {sorted(PROMPTS)}") from None


# --------------------------------------------------------------------------------------------
# option labels


def excel_label(i: int) -> str:
    """The ``i``-th (0-based) Excel column label: 0 -> A, 25 -> Z, 26 -> AA, 27 -> AB, ..."""
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise ValueError(f"label index must be an int >= 0, got {i!r}")
    out = ""
    n = i + 1
    while n > 0:
        n, r = divmod(n - 1, 26)
        out = chr(ord("A") + r) + out
    return out


def first_token_id(tokenizer: Any, text: str) -> int:
    """``tokenizer.encode(text, add_special_tokens=False)[0]`` with a clear error when empty."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) == 0:
        raise ValueError(f"{_tok_name(tokenizer)} encodes {text!r} to no token")
    return int(ids[0])


def option_labels(n: int, tokenizer: Any | None = None, *, max_tries: int = 100_000) -> list[str]:
    """The first ``n`` option labels under the tokenizer-aware rule of §2.2.

    Walks i = 0, 1, 2, ..., and keeps :func:`excel_label` (i) only if its first token id
    (``tokenizer.encode(label, add_special_tokens=False)[0]``) differs from the first token of
    every label already kept. Without a tokenizer the plain Excel labels are returned.

    Parameters
    ----------
    n
        Number of labels wanted (K + 1 with the none option).
    tokenizer
        Object with an ``encode(text, add_special_tokens=False)`` method.
    max_tries
        Safety bound on the walk.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if tokenizer is None:
        return [excel_label(i) for i in range(n)]
    kept: list[str] = []
    seen: set[int] = set()
    i = 0
    while len(kept) < n:
        if i >= max_tries:
            raise ValueError(
                f"only {len(kept)} labels with distinct first tokens among the first "
                f"{max_tries} Excel labels for {_tok_name(tokenizer)}"
            )
        label = excel_label(i)
        tid = first_token_id(tokenizer, label)
        if tid not in seen:
            seen.add(tid)
            kept.append(label)
        i += 1
    return kept


def format_choices(steps: Sequence[str], labels: Sequence[str]) -> str:
    """The ``{choices}`` block: ``"<LABEL>. <step>"`` lines, ``"None of the above."`` last.

    ``labels`` must hold ``len(steps) + 1`` labels; the lines are joined with ``"\\n"`` with no
    trailing newline (§2.2).
    """
    steps = list(steps)
    if len(labels) != len(steps) + 1:
        raise ValueError(
            f"need {len(steps) + 1} labels for {len(steps)} steps + none, got {len(labels)}"
        )
    options = [*steps, NONE_OPTION]
    return "\n".join(f"{lab}. {text}" for lab, text in zip(labels, options, strict=True))


def _tok_name(tokenizer: Any) -> str:
    name = getattr(tokenizer, "name_or_path", None) or ""
    return f"tokenizer {type(tokenizer).__name__}" + (f" ({name!r})" if name else "")


_PREFIX_MARKS = ("▁", "Ġ", " ", "\u2581")


def check_single_tokens(
    tokenizer: Any, labels: Iterable[str], digits: Iterable[str] | None = DIGITS
) -> dict[str, int]:
    """Check that each label and digit is read through one bare, distinct first token.

    For every string s: the first token of ``tokenizer.encode(s, add_special_tokens=False)``
    must decode back to exactly ``s``, its token string must carry no ``"▁"`` / ``"Ġ"`` / space
    prefix, and no two strings of the same group (labels; digits) may share a first token.

    Parameters
    ----------
    tokenizer
        A transformers tokenizer (``encode``, ``decode``, optionally ``convert_ids_to_tokens``).
    labels
        The option labels in use.
    digits
        The digit answers; ``None`` skips them.

    Returns
    -------
    dict
        ``{string: first token id}`` for all checked strings.

    Raises
    ------
    ValueError
        Naming the offending label or digit and the tokenizer.
    """
    out: dict[str, int] = {}
    groups = [("label", list(labels))]
    if digits is not None:
        groups.append(("digit", list(digits)))
    for kind, items in groups:
        owner: dict[int, str] = {}
        for s in items:
            tid = first_token_id(tokenizer, s)
            text = tokenizer.decode([tid])
            token = None
            if hasattr(tokenizer, "convert_ids_to_tokens"):
                token = tokenizer.convert_ids_to_tokens(tid)
            if text != s:
                raise ValueError(
                    f"{kind} {s!r}: first token {tid} ({token!r}) of {_tok_name(tokenizer)} "
                    f"decodes to {text!r}, not {s!r}; the scores would be read at the wrong token"
                )
            if isinstance(token, str) and token.startswith(_PREFIX_MARKS):
                raise ValueError(
                    f"{kind} {s!r}: first token {tid} of {_tok_name(tokenizer)} is {token!r}, "
                    f"with a word-start prefix; the answer token would not be the bare {s!r}"
                )
            if tid in owner:
                raise ValueError(
                    f"{kind}s {owner[tid]!r} and {s!r} share first token {tid} in "
                    f"{_tok_name(tokenizer)}"
                )
            owner[tid] = s
            out[s] = tid
    return out


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of token sequences (shared-prefix scoring)."""
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        t = first[i]
        if any(s[i] != t for s in seqs):
            return i
    return n


#: More characters per token than any tokenizer packs on average: a goal and steps longer than
#: ``MAX_CHARS_PER_TOKEN`` x the context cannot fit, so they are refused without tokenising.
MAX_CHARS_PER_TOKEN = 32


def check_task_text(goal: str, steps: Sequence[str], *, context_tokens: int | None) -> None:
    """Refuse a goal and steps that cannot fit a model's context, before tokenising them.

    A goal far longer than any context would take long to tokenise and then fail on allocation;
    this check only counts characters. The message quotes at most the goal's first 60 characters.

    Raises
    ------
    ValueError
        When the text is longer than ``MAX_CHARS_PER_TOKEN * context_tokens`` characters.
    """
    if not context_tokens:
        return
    total = len(goal) + sum(len(s) for s in steps)
    if total > MAX_CHARS_PER_TOKEN * context_tokens:
        head = goal.splitlines()[0][:60] if goal.strip() else ""
        raise ValueError(
            f"the goal and steps hold {total:,} characters, more than a context of "
            f"{context_tokens:,} tokens can hold (goal: {head!r}...)"
        )
