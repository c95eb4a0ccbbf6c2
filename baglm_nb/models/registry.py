"""The LMM registry: which models this project scores with, and loading one from disk.

:data:`MODELS` maps a short id (``"internvl3-8b"``) to its :class:`ModelSpec` (Hugging Face id,
family); :data:`FAMILIES` are the families with a native transformers back-end, each with its
transformers class (:func:`model_class`); all three are derived from the family specs of
:mod:`baglm_nb.models.families`. :func:`load_scorer` loads one as a
:class:`~baglm_nb.models.engine.TransformersScorer` from a local folder or the Hugging Face cache,
never from the network by default; missing weights raise :class:`WeightsNotFoundError` with
instructions. Tiny randomly initialised models for tests are :mod:`baglm_nb.models.testing`'s.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch

from baglm_nb.models.engine import PRETRAINED, RANDOM_INIT, TransformersScorer
from baglm_nb.models.families import FAMILIES, MODELS, family_of_model_type, family_spec
from baglm_nb.models.families.base import ModelSpec
from baglm_nb.models.fingerprints import record_fingerprint, weights_record

__all__ = [
    "FAMILIES",
    "MODELS",
    "ModelSpec",
    "WeightsNotFoundError",
    "load_scorer",
    "model_class",
]


class WeightsNotFoundError(FileNotFoundError):
    """The model's weights are not on this machine (they are never downloaded implicitly)."""


def model_class(family: str) -> Any:
    """The transformers model class of a family of :data:`FAMILIES` (its spec's
    :attr:`~baglm_nb.models.families.base.FamilySpec.model_class`)."""
    import transformers

    if family not in FAMILIES:
        raise KeyError(family)
    return getattr(transformers, family_spec(family).model_class)


def _hf_cache_hint(hf_id: str) -> str:
    folder = "models--" + hf_id.replace("/", "--")
    return (
        "Weights are never downloaded here. Put them in the Hugging Face cache: on a machine with "
        f"network run `hf download {hf_id}` (or huggingface_hub.snapshot_download), then copy "
        f"the folder hub/{folder} into this machine's $HF_HOME/hub (default "
        "~/.cache/huggingface/hub), or pass a local model directory."
    )


def _resolve_weights(source: str, *, local_files_only: bool, cache_dir: str | None) -> Path:
    """Local folder holding the model (config + weights), or :class:`WeightsNotFoundError`."""
    path = Path(source).expanduser()
    if path.is_dir():
        folder = path
    else:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

        try:
            folder = Path(
                snapshot_download(source, local_files_only=local_files_only, cache_dir=cache_dir)
            )
        except (LocalEntryNotFoundError, FileNotFoundError, HFValidationError) as exc:
            raise WeightsNotFoundError(
                f"no local copy of model {source!r}. {_hf_cache_hint(source)}"
            ) from exc
    weights = [
        p
        for pattern in ("*.safetensors", "*.bin", "*.safetensors.index.json", "*.bin.index.json")
        for p in folder.glob(pattern)
    ]
    if not (folder / "config.json").is_file() or not weights:
        raise WeightsNotFoundError(
            f"{folder} has no config.json or no weight files for model {source!r}. "
            f"{_hf_cache_hint(source)}"
        )
    return folder


def load_scorer(
    model: str,
    *,
    family: str | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    trust_remote_code: bool = False,
    local_files_only: bool = True,
    cache_dir: str | None = None,
    **scorer_kwargs: Any,
) -> TransformersScorer:
    """Load a real LMM (weights already on disk) as a :class:`TransformersScorer`.

    Parameters
    ----------
    model
        A short id of :data:`MODELS`, a Hugging Face id, or a local model folder.
    family
        Override the family (default from the registry or the config's ``model_type``).
    device, dtype
        Default CUDA with bfloat16 when available, else CPU with float32; the native families
        run SDPA attention.
    trust_remote_code
        Run the repository's own Python code. Needed only for the original InternVL format
        (e.g. ``OpenGVLab/InternVL2_5-8B``); off by default, and a warning when on.
    local_files_only
        Never contact the Hub (default). Set False to allow a download on a machine with network.
    cache_dir
        Hugging Face cache folder (default ``$HF_HOME/hub``).
    **scorer_kwargs
        Passed to :class:`TransformersScorer`.

    Raises
    ------
    WeightsNotFoundError
        When the weights are not on disk, with instructions.
    ValueError
        For an original-format InternVL without ``trust_remote_code=True``.
    """
    if trust_remote_code:
        warnings.warn(
            f"trust_remote_code=True: loading {model!r} runs Python code from the model "
            "repository; only do this for a repository you trust",
            stacklevel=2,
        )
    spec = MODELS.get(model)
    source = spec.hf_id if spec else model
    folder = _resolve_weights(source, local_files_only=local_files_only, cache_dir=cache_dir)
    with open(folder / "config.json", encoding="utf-8") as f:
        raw_config = json.load(f)
    fam, scorer_family = _families(
        raw_config.get("model_type", ""), family or (spec.family if spec else None)
    )
    remote = scorer_family != fam
    if remote and not trust_remote_code:
        raise ValueError(
            f"{source} is in the original {fam} repository format, which needs "
            "trust_remote_code=True (it runs the repository's code); or use an '-hf' checkpoint "
            "such as OpenGVLab/InternVL3-8B-hf"
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if dtype is None:
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    net, tokenizer, processor = _load_parts(folder, fam, remote, dtype)
    chat_template = scorer_kwargs.pop("chat_template", None) or _template_from_files(folder)
    return TransformersScorer(
        net.to(device).eval(),
        tokenizer,
        family=scorer_family,
        model_id=spec.short_id if spec else model,
        label=RANDOM_INIT if raw_config.get("baglm_random_init", False) else PRETRAINED,
        processor=processor,
        chat_template=chat_template,
        weights_record=(record := weights_record(folder)),
        fingerprint=record_fingerprint(record),
        **scorer_kwargs,
    )


def _families(model_type: str, family: str | None) -> tuple[str, str]:
    """The family of a checkpoint (``family`` when given, else its ``model_type``'s), and the
    scorer's family: ``"<family>-remote"`` for a ``model_type`` of the original repository
    format (which needs ``trust_remote_code``)."""
    by_type = family_of_model_type(model_type)
    fam = family or (by_type[0] if by_type else None)
    if fam is None:
        raise ValueError(f"cannot tell the family of model_type {model_type!r}; pass family=...")
    if by_type is not None and by_type[1]:
        return fam, family_spec(by_type[0]).remote_name or fam
    return fam, fam


def _load_parts(folder: Path, family: str, remote: bool, dtype: torch.dtype) -> tuple[Any, ...]:
    """(model, tokenizer, processor or ``None``) from a local folder, offline."""
    import transformers

    load_kw: dict[str, Any] = {"dtype": dtype, "local_files_only": True}
    tok_kw: dict[str, Any] = {"local_files_only": True}
    if remote:
        load_kw["trust_remote_code"] = tok_kw["trust_remote_code"] = True
        tok_kw["use_fast"] = False
        net = transformers.AutoModel.from_pretrained(str(folder), low_cpu_mem_usage=True, **load_kw)
    else:  # PyTorch's fused attention (flash / memory-efficient kernels on CUDA)
        net = model_class(family).from_pretrained(
            str(folder), attn_implementation="sdpa", **load_kw
        )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **tok_kw)
    processor = None
    try:  # the processor only supplies the chat template; its image side may need torchvision
        processor = transformers.AutoProcessor.from_pretrained(str(folder), **tok_kw)
    except Exception:  # noqa: BLE001
        processor = None
    return net, tokenizer, processor


def _template_from_files(folder: Path) -> str | None:
    """A chat template shipped beside the weights (``chat_template.jinja`` / ``.json``)."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    js = folder / "chat_template.json"
    if js.is_file():
        with open(js, encoding="utf-8") as f:
            return json.load(f).get("chat_template")
    return None
