"""A *simulated* LLM dependency source: seeded prerequisite matrices built from the ground truth.

**This is not a real LLM.** The paper asks LLaMA-3.3-70B (or GPT-4.1-mini) K² yes/no questions
per task group ("is step j strictly required before step i?") and keeps P(Yes) as ``D[i, j]``.
No LLM runs on a CPU-only machine, so this module draws what such a matrix could look like from
a small, documented generative model conditioned on the ground-truth step orders of the group's
videos. Its matrices carry the label ``simulated-llm:<preset>`` (:func:`label`); numbers computed
with them must never be reported as an LLM's.

Generative model (per task group ``g``: K steps, the group's annotated videos)
-----------------------------------------------------------------------------
1. **Order evidence.** For each ordered pair (i, j), diagonal included, ``n[i, j]`` counts the
   group's videos in which both steps occur and ``b[i, j]`` those in which step j's first start
   is strictly before step i's (:func:`~baglm_nb.inputs.grid.first_starts`). The smoothed
   fraction ``e = (b + 1/2) / (n + 1)`` is 1/2 without evidence; a step never strictly precedes
   itself, so ``e[i, i] = 1 / (2 (n + 1))``.
2. **The LLM's log-odds** of answering "Yes, j is a prerequisite of i":
   ``l[i, j] = a_g (2 e - 1) + bias + noise * eps[i, j]`` with ``eps ~ N(0, 1)`` i.i.d. and
   ``a_g = weight * exp(spread * eta_g - spread^2 / 2)``, ``eta_g ~ N(0, 1)`` per group: how well
   the LLM knows this task's usual order (``spread = 0``: equally well for every task; the mean
   of ``a_g`` is ``weight``). The LLM never sees a video: the group's orders stand in for what
   it knows about how the task is usually done.
3. **The answer probability as the published code reads it** (reference protocol, section 4.3):

   - ``"sampled"`` (LLaMA-3.3-70B): the code keeps P(Yes) from the *sampling-processed*
     distribution, temperature 0.6 then nucleus top-p 0.9. For the two answers,
     ``q = sigmoid(l / 0.6)``; ``D = 1`` when ``q >= 0.9`` (the nucleus holds "Yes" alone),
     ``D = 0`` when ``q <= 0.1``, else ``D = q``. Mostly exact 0/1.
   - ``"logprob"`` (GPT-4.1-mini): P(Yes) from the top log-probabilities, ``D = sigmoid(l)``,
     graded, and kept below 1 (at most ``1 - 2**-20``: nothing survives the paper's threshold
     1.0 for GPT-4.1-mini).

Randomness: ``np.random.default_rng([seed, zlib.crc32(group)])`` per group draws ``eta_g`` then
``eps`` (K, K), so a group's matrix does not depend on the other groups. The evidence uses every
annotated video of the group (the whole annotation file), whatever ``limit`` a table uses: an
LLM's matrix belongs to the task, not to the evaluated subset.

Presets and their calibration
-----------------------------
:data:`PRESETS` ``llama`` and ``gpt`` hold ``weight, bias, noise, spread`` fitted (seed 0) to the
paper's HT-Step dependency-violation table (:data:`~baglm_nb.inputs.paper.PAPER_VIOLATIONS`)
by :func:`baglm_nb.analyses.violations.fit_preset`; ``python -m baglm_nb calibrate --deps llama
gpt`` reproduces them and prints the curves. Only the violation table is a target: BaGLM's rows
are an out-of-sample check. The same presets are used on every dataset (the paper's table covers
HT-Step only). On Ego4D every group is one video, so the evidence is that video's own order and
the simulated matrix is close to the video's oracle chain (a real LLM sees only the step texts).

**Held-out evidence** (``held_out=True``, setting ``simulated-llm:<preset>:held-out``): a
diagnostic variant. The default evidence includes the evaluated video's own order (in-sample:
the simulated LLM has "seen" the test video, which a real LLM has not); held out, each video
gets the matrix its group's *other* videos give (same seed, same noise draws: only the evidence
differs), so D is per video. With one video per group (Ego4D) nothing is left and
``e = 1/2`` everywhere. The presets are calibrated with the default (in-sample) evidence.

A second, simpler source sweeps dependency quality (:func:`noisy_oracle_dependencies`): each
video's oracle chain with every entry replaced, with probability ``level``, by a uniform draw.

Exports :data:`PREFIX`, :data:`PRESETS`, :class:`LLMPreset`, :func:`label`,
:func:`order_evidence`, :func:`answer_probability`, :func:`simulated_matrix`,
:func:`simulated_dependencies`, :func:`noisy_oracle_matrix` and
:func:`noisy_oracle_dependencies`.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from baglm_nb.core.oracles import oracle_dependency
from baglm_nb.inputs.datasets import Video, dataset_version, load_dataset
from baglm_nb.inputs.grid import first_starts

__all__ = [
    "ANSWERS",
    "HELD_OUT",
    "NOISY_ORACLE",
    "PREFIX",
    "PRESETS",
    "SIMULATED_LLM",
    "LLMPreset",
    "answer_probability",
    "label",
    "noisy_oracle_dependencies",
    "noisy_oracle_matrix",
    "order_evidence",
    "simulated_dependencies",
    "simulated_matrix",
]

#: The deps setting and label prefix of this source (``simulated-llm:<preset>``).
PREFIX = "simulated-llm"

#: The default deps setting on the CPU: the simulated LLaMA-3.3-70B preset (the paper's LLM).
SIMULATED_LLM = f"{PREFIX}:llama"

#: The deps setting and label prefix of the dependency-quality sweep (``noisy-oracle:<level>``).
NOISY_ORACLE = "noisy-oracle"

#: The suffix of the held-out variant's setting and label (``simulated-llm:<preset>:held-out``).
HELD_OUT = "held-out"

#: How an answer probability is read from the LLM (module docstring, step 3).
ANSWERS = ("sampled", "logprob")

#: LLaMA's generation config in the published code: temperature, then nucleus top-p.
_TEMPERATURE, _TOP_P = 0.6, 0.9

#: The largest "logprob" answer (below 1: GPT-4.1-mini keeps nothing at threshold 1.0).
_LOGPROB_MAX = 1.0 - 2.0**-20


@dataclass(frozen=True)
class LLMPreset:
    """Parameters of one simulated LLM (module docstring).

    Attributes
    ----------
    name : str
        Preset name (``llama``, ``gpt``); the label is ``simulated-llm:<name>``.
    llm : str
        The paper's LLM whose violation curves the preset is fitted to.
    answer : {"sampled", "logprob"}
        How P(Yes) is read (step 3).
    weight : float
        Mean weight of the order evidence on the log-odds.
    bias : float
        Log-odds of "Yes" without evidence (``e = 1/2``) before noise.
    noise : float
        Standard deviation of the per-pair noise on the log-odds.
    spread : float
        Log-normal spread of the evidence weight across task groups.
    """

    name: str
    llm: str
    answer: str
    weight: float
    bias: float
    noise: float
    spread: float

    def __post_init__(self) -> None:
        if self.answer not in ANSWERS:
            raise ValueError(f"answer must be one of {ANSWERS}, got {self.answer!r}")
        if not (self.noise >= 0 and self.spread >= 0):
            raise ValueError(f"noise and spread must be >= 0, got {self.noise}, {self.spread}")

    @property
    def label(self) -> str:
        """``simulated-llm:<name>``."""
        return f"{PREFIX}:{self.name}"

    def with_values(self, values: Sequence[float]) -> LLMPreset:
        """A copy with ``(weight, bias, noise, spread)`` replaced."""
        weight, bias, noise, spread = (float(v) for v in values)
        return LLMPreset(self.name, self.llm, self.answer, weight, bias, noise, spread)

    @property
    def values(self) -> tuple[float, float, float, float]:
        """``(weight, bias, noise, spread)``."""
        return (self.weight, self.bias, self.noise, self.spread)


#: The calibrated presets (module docstring; ``python -m baglm_nb calibrate --deps llama gpt``).
PRESETS: dict[str, LLMPreset] = {
    "llama": LLMPreset("llama", "LLaMA-3.3-70B", "sampled", 20.779, -0.902, 6.454, 0.602),
    "gpt": LLMPreset("gpt", "GPT-4.1-mini", "logprob", 15.003, -5.946, 5.544, 1.214),
}


def label(preset: str | LLMPreset, held_out: bool = False) -> str:
    """The label of a preset (by name or object): ``simulated-llm:<name>[:held-out]``."""
    text = preset.label if isinstance(preset, LLMPreset) else f"{PREFIX}:{preset}"
    return f"{text}:{HELD_OUT}" if held_out else text


def _preset(preset: str | LLMPreset) -> LLMPreset:
    if isinstance(preset, LLMPreset):
        return preset
    if preset not in PRESETS:
        raise ValueError(f"unknown simulated-LLM preset {preset!r}; presets: {sorted(PRESETS)}")
    return PRESETS[preset]


def order_evidence(videos: Sequence[Video]) -> tuple[np.ndarray, np.ndarray]:
    """``(n, b)`` of one group (step 1): co-occurrences and "j strictly before i" counts.

    All ``videos`` must share the group's step list.
    """
    k = videos[0].num_steps
    n = np.zeros((k, k))
    b = np.zeros((k, k))
    for video in videos:
        if video.steps != videos[0].steps:
            raise ValueError(f"videos {videos[0].uid!r} and {video.uid!r} differ in steps")
        t = np.full(k, np.inf)
        for column, start in first_starts(video).items():
            t[column] = start
        present = np.isfinite(t)
        both = present[:, None] & present[None, :]
        n += both
        b += both & (t[None, :] < t[:, None])
    return n, b


def answer_probability(logits: np.ndarray, answer: str) -> np.ndarray:
    """P(Yes) as the published code reads it from log-odds ``logits`` (step 3)."""
    logits = np.asarray(logits, dtype=np.float64)
    if answer == "sampled":
        q = 1.0 / (1.0 + np.exp(-logits / _TEMPERATURE))
        return np.where(q >= _TOP_P, 1.0, np.where(q <= 1.0 - _TOP_P, 0.0, q))
    if answer == "logprob":
        return np.minimum(1.0 / (1.0 + np.exp(-logits)), _LOGPROB_MAX)
    raise ValueError(f"answer must be one of {ANSWERS}, got {answer!r}")


def simulated_matrix(
    videos: Sequence[Video],
    preset: str | LLMPreset = "llama",
    seed: int = 0,
    *,
    evidence: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """The simulated (K, K) matrix of the group of ``videos`` (one group, shared steps).

    ``evidence`` is :func:`order_evidence` of ``videos`` when the caller already has it.
    """
    p = _preset(preset)
    n, b = order_evidence(videos) if evidence is None else evidence
    e = (b + 0.5) / (n + 1.0)
    rng = np.random.default_rng([int(seed), zlib.crc32(videos[0].group.encode())])
    eta = rng.standard_normal()
    eps = rng.standard_normal(n.shape)
    weight = p.weight * np.exp(p.spread * eta - 0.5 * p.spread**2)
    d = answer_probability(weight * (2.0 * e - 1.0) + p.bias + p.noise * eps, p.answer)
    d.setflags(write=False)
    return d


def _groups(videos: Sequence[Video]) -> dict[str, list[Video]]:
    groups: dict[str, list[Video]] = {}
    for video in videos:
        groups.setdefault(video.group, []).append(video)
    return groups


def simulated_dependencies(
    dataset: str,
    preset: str | LLMPreset = "llama",
    seed: int = 0,
    *,
    videos: Sequence[Video] | None = None,
    held_out: bool = False,
) -> dict[str, np.ndarray]:
    """``{group: (K, K)}`` for every group of ``dataset`` (or of ``videos``), label-free.

    The evidence of each group comes from all its videos in ``videos`` (default: the whole
    annotation file). ``held_out`` gives ``{uid: (K, K)}`` instead, each video's matrix from the
    evidence of the group's other videos (module docstring). The matrices of a whole annotation
    file are computed once per file content (:func:`~baglm_nb.inputs.datasets.dataset_version`),
    preset, seed and variant, and shared (they are read-only); the dict is the caller's.
    """
    if videos is None:
        return dict(_whole_dataset(dataset_version(dataset), _preset(preset), int(seed), held_out))
    return _matrices(_groups(videos), preset, seed, held_out)


@functools.lru_cache(maxsize=16)
def _whole_dataset(
    version: tuple, preset: LLMPreset, seed: int, held_out: bool
) -> dict[str, np.ndarray]:
    """:func:`simulated_dependencies` of a whole annotation file, remembered per ``version``."""
    by_group = _groups(load_dataset(version[0].name))
    return _matrices(by_group, preset, seed, held_out, _whole_evidence(version))


@functools.lru_cache(maxsize=8)
def _whole_evidence(version: tuple) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`order_evidence` of every group of a whole annotation file, remembered per
    ``version``: it does not depend on the preset or the seed, so a preset fit
    (:func:`~baglm_nb.analyses.violations.fit_preset`) counts it once (read-only arrays)."""
    evidence = {g: order_evidence(vs) for g, vs in _groups(load_dataset(version[0].name)).items()}
    for arrays in evidence.values():
        for a in arrays:
            a.setflags(write=False)
    return evidence


def _matrices(
    by_group: Mapping[str, list[Video]],
    preset: str | LLMPreset,
    seed: int,
    held_out: bool,
    evidence: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> dict[str, np.ndarray]:
    if evidence is None:
        evidence = {g: order_evidence(vs) for g, vs in by_group.items()}
    if not held_out:
        return {
            g: simulated_matrix(vs, preset, seed, evidence=evidence[g])
            for g, vs in by_group.items()
        }
    out = {}
    for g, vs in by_group.items():
        n, b = evidence[g]
        for video in vs:
            own_n, own_b = order_evidence([video])
            out[video.uid] = simulated_matrix(vs, preset, seed, evidence=(n - own_n, b - own_b))
    return out


def noisy_oracle_matrix(video: Video, level: float, seed: int = 0) -> np.ndarray:
    """The video's oracle chain with each entry replaced, with probability ``level``, by U(0, 1).

    ``level = 0`` is the oracle chain, ``level = 1`` pure noise. Seeded per video
    (``[seed, crc32(uid)]``: a mask draw, then the uniform values, both (K, K)).
    """
    if not 0.0 <= level <= 1.0:
        raise ValueError(f"level must be in [0, 1], got {level}")
    d = oracle_dependency(video)
    rng = np.random.default_rng([int(seed), zlib.crc32(video.uid.encode())])
    replaced = rng.random(d.shape) < level
    noise = rng.random(d.shape)
    out = np.where(replaced, noise, d)
    out.setflags(write=False)
    return out


def noisy_oracle_dependencies(
    videos: Sequence[Video], level: float, seed: int = 0
) -> Mapping[str, np.ndarray]:
    """``{uid: noisy_oracle_matrix(video, level, seed)}`` for every video."""
    return {v.uid: noisy_oracle_matrix(v, level, seed) for v in videos}
