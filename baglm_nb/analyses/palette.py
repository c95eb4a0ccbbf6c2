"""One colour per method or source, in every figure: the palette and its line styles.

A method or a source keeps its hue in every figure of every notebook: BaGLM (and the D it uses
by default, LLaMA's) blue, the off-the-shelf LMM orange, GPT-4.1-mini purple, the oracle chain
green, and so on (:data:`COLOURS`). :func:`colour` maps any label the workbench draws (a method,
a D, a table row, ``"paper: LLaMA-3.3-70B"``, ``"gain, D = simulated-llm:gpt"``) to its hue
(:func:`key_of`), so a simulated curve and the paper's curve of the same method share it. The
line style says whose number it is: the workbench's :data:`WORKBENCH` (solid), the paper's
:data:`PAPER` (dashed), a reference level drawn across :data:`REFERENCE` (dotted), a marked
value on the x axis :data:`MARK` (dash-dot); the paper's values of a bar chart are
:data:`PAPER_TICK` ticks. Labels that no rule knows get the :data:`SPARE` hues, in order.

Two other kinds of colour have their own hues, never a method's or a source's, so that a hue
keeps one meaning: the steps of a task (:data:`STEP_COLOURS`: belief views, notebook 08's and
09's strips, the explorer, ``follow``'s report; :data:`NONE_STATE` for "none") and the timed
stages of a run (:data:`STAGE_COLOURS`: notebook 07, the report's latency bars).

Exports :data:`COLOURS`, :data:`SPARE`, :data:`STEP_COLOURS`, :data:`NONE_STATE`,
:data:`STAGE_COLOURS`, :data:`PAPER_TICK`, :data:`CALIBRATED_HATCH`,
:data:`WORKBENCH`, :data:`PAPER`, :data:`REFERENCE`, :data:`MARK`, :func:`key_of`,
:func:`colour`, :func:`colours` and :func:`ink_on`.
"""

from __future__ import annotations

from collections.abc import Iterable

from baglm_nb.inputs.variants import TRANSITION_SPECS, TransitionSpec

__all__ = [
    "CALIBRATED_HATCH",
    "COLOURS",
    "MARK",
    "NONE_STATE",
    "PAPER",
    "PAPER_TICK",
    "REFERENCE",
    "SPARE",
    "STAGE_COLOURS",
    "STEP_COLOURS",
    "WORKBENCH",
    "colour",
    "colours",
    "ink_on",
    "key_of",
]

#: The hue of each method or source (keys: :func:`key_of`).
COLOURS: dict[str, str] = {
    "baglm": "#1f77b4",  # BaGLM, its published setting, and LLaMA's D (the default D)
    "off_the_shelf": "#ff7f0e",  # the LMM alone (multiple-choice prompt)
    "gpt": "#9467bd",  # GPT-4.1-mini's D
    "held_out": "#17becf",  # the simulated LLaMA, held out
    "oracle": "#2ca02c",  # the oracle chain D (and the noisy-oracle sweep)
    "oracle_progress": "#d62728",  # the LLM's D with the oracle progress
    "oracle_both": "#0b5d1e",  # the oracle D with the oracle progress
    "static": "#8c564b",  # transition: static (its key: _transition_key)
    "readiness": "#e377c2",  # transition: readiness only
    "validity": "#bcbd22",  # transition: validity only
    "next_step": "#7b4173",  # prior: the LMM's next-step scores
    "propagated": "#e7ba52",  # prior: the propagated prior (amber: not oracle_progress's red)
    "binary": "#8c6d31",  # the binary VSG prompt
    "per_segment": "#637939",  # one filter step per segment
    "none": "#7f7f7f",  # no D
    "baseline": "#a0a0a0",  # the paper's other methods (NaSVA, VINA, ...)
}

#: Hues for labels no rule knows, in order of first appearance in a figure.
SPARE: tuple[str, ...] = ("#393b79", "#e7969c", "#6b6ecf", "#b5cf6b", "#843c39", "#5254a3")

#: The hues of a task's steps, in step order, repeating after the last (step numbers tell
#: repeated hues apart): none of them a method's or a source's (:data:`COLOURS`, :data:`SPARE`)
#: or a right / wrong strip's, each far from all of those in CIELAB (tests/test_plots.py).
STEP_COLOURS: tuple[str, ...] = (
    "#5511ff",  # violet
    "#f0027f",  # magenta
    "#9c9ede",  # lavender
    "#a65628",  # rust
    "#e7cb94",  # tan
    "#a1d99b",  # light green
    "#fb8072",  # salmon
    "#de9ed6",  # orchid
    "#8dd3c7",  # aqua
    "#ffd92f",  # yellow
)

#: The "none" state (no step) beside the steps: light grey.
NONE_STATE = "#dbdbdb"

#: The hues of the timed stages of a run (notebook 07's bars, ``follow``'s latency bars):
#: none of them a method's, a source's or a step's.
STAGE_COLOURS: dict[str, str] = {
    "decode": "#ccebc5",  # decoding + preprocessing
    "vsg": "#8da0cb",  # VSG scores
    "progress": "#fc8d62",  # progress scores
    "score": "#66c2a5",  # scoring (VSG + progress) of a followed segment
    "wait": "#fdcdac",  # waiting for a live source
    "filter": "#cab2d6",  # the filter's update
}

#: The colour of the paper's value ticks on a bar chart.
PAPER_TICK = "black"

#: The hatch of a bar calibrated to the paper's value (it agrees by construction).
CALIBRATED_HATCH = "///"

#: Line styles: the workbench's curve, the paper's curve, a reference level, a marked x value.
WORKBENCH, PAPER, REFERENCE, MARK = "-", "--", ":", "-."


def _transition_key(spec: TransitionSpec) -> str:
    """A transition variant's :data:`COLOURS` key: BaGLM's own for the full transition, the
    variant's name for the others."""
    return "baglm" if spec.is_full else spec.name


#: Exact labels (lower case) the workbench's tables use, and their key (each transition
#: variant's name from its spec).
_EXACT: dict[str, str] = {
    **{name: _transition_key(spec) for name, spec in TRANSITION_SPECS.items()},
    "baglm": "baglm",
    "+ baglm": "baglm",
    "3) uniform 1/(k+1)": "baglm",
    "per second (published code)": "baglm",
    "llm d, lmm progress": "baglm",
    "off-the-shelf lmm": "off_the_shelf",
    "off-the-shelf": "off_the_shelf",
    "multiple choice (pi_vsg)": "off_the_shelf",
    "internvl2.5-8b": "off_the_shelf",
    "llm d, oracle progress": "oracle_progress",
    "oracle d, lmm progress": "oracle",
    "oracle d, oracle progress": "oracle_both",
    "1) next-step scores (pi_next)": "next_step",
    "2) propagated": "propagated",
    "binary (pi_vsg^bin)": "binary",
    "per segment (paper's equations)": "per_segment",
    "oracle chain + noise": "oracle",
    "none": "none",
}

#: Substring rules, first match wins (after the exact labels).
_CONTAINS: tuple[tuple[str, str], ...] = (
    ("held-out", "held_out"),
    ("gpt", "gpt"),
    ("llama", "baglm"),
    ("noisy-oracle", "oracle"),
    ("oracle", "oracle"),
    ("nasva", "baseline"),
    ("baglm", "baglm"),
    ("off-the-shelf", "off_the_shelf"),
)

#: Prefixes that name whose number a label is, not what it is.
_PREFIXES = ("paper: ", "paper ", "gain, d = ", "d = ", "d=")


def key_of(label: object) -> str | None:
    """The :data:`COLOURS` key of a label, or None when no rule knows it.

    ``"paper: "``, ``"gain, D = "`` and similar prefixes are dropped first; a label such as
    ``"BaGLM (D=oracle)"`` or ``"BaGLM gain (D=simulated-llm:gpt)"`` takes the hue of its D.
    """
    text = str(label).strip().lower()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if "(d=" in text:
        text = text.split("(d=", 1)[1].rstrip(")")
    if text in _EXACT:
        return _EXACT[text]
    return next((key for part, key in _CONTAINS if part in text), None)


def colour(label: object, spare: int = 0) -> str:
    """The hue of ``label`` (:func:`key_of`); an unknown label gets ``SPARE[spare]``."""
    key = key_of(label)
    return COLOURS[key] if key is not None else SPARE[spare % len(SPARE)]


def colours(labels: Iterable[object]) -> dict[str, str]:
    """A hue per label: the palette's, unknown labels the :data:`SPARE` hues in order."""
    out: dict[str, str] = {}
    spare = 0
    for label in labels:
        name = str(label)
        if name in out:
            continue
        if key_of(name) is None:
            out[name] = SPARE[spare % len(SPARE)]
            spare += 1
        else:
            out[name] = colour(name)
    return out


def ink_on(background) -> str:
    """The text colour that reads on ``background`` (any matplotlib colour): black on a light
    one, white on a dark one (by its luma, ITU-R BT.601 weights)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(background)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"
