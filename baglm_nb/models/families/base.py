"""What every LMM family spec holds, and the adapter base class its family specialises.

A :class:`FamilySpec` is everything the project knows about one model family: its registry rows
(:class:`ModelSpec`), the config ``model_type`` values that name it, its transformers model
class, its options (a frozen dataclass of the family's own settings, e.g. Qwen2.5-VL's fps and
pixel bounds), its frame preprocessing, its :class:`Adapter` (prompt layout, model calls), its
default system message, its special tokens, its served layout (the name fragments that tell it
from a served model's name, the user turn's frames and question, the frames' pixel bounds and
resize) and its tiny test config.

An :class:`Adapter` turns segments and question texts into what the family's transformers model
expects, for :class:`baglm_nb.models.engine.TransformersScorer`: the pixel inputs (the spec's
``preprocess``), the visual features scattered into the token embeddings, the language model
with a KV cache, the output head, and the model's own full forward pass.

The family specs load no heavy library when imported (torch only inside the functions that use
it), so that the command line's help strings can list them (:mod:`baglm_nb.apps.cli`).

Exports :class:`FamilySpec`, :class:`ModelSpec`, :class:`Adapter`, :class:`NoOptions`,
:func:`image_part` and :func:`resized_frames`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = ["Adapter", "FamilySpec", "ModelSpec", "NoOptions", "image_part", "resized_frames"]


@dataclass(frozen=True)
class ModelSpec:
    """One registered LMM.

    Parameters
    ----------
    short_id
        Project name (``"internvl3-8b"``); also the ``model_id`` of its scores.
    hf_id
        Hugging Face repository id.
    family
        Its family's :attr:`FamilySpec.name`.
    remote_code
        True when the repository is in the original (non ``-hf``) format, which only loads with
        ``trust_remote_code=True``.
    """

    short_id: str
    hf_id: str
    family: str
    remote_code: bool = False


@dataclass(frozen=True)
class NoOptions:
    """The options of a family that has none."""


class Adapter:
    """Family-specific input building and model calls (one instance per scorer).

    Parameters
    ----------
    model
        The family's transformers model, in eval mode on its device.
    tokenizer
        The model's tokenizer.
    options
        The family's options (an instance of its :attr:`FamilySpec.options`).
    system_message
        The system turn of the prompts; ``None`` for none.
    """

    name = ""
    placeholder = ""  # the video placeholder the chat template renders
    vision_token = ""  # the token the visual features replace ...
    vision_id_field = ""  # ... and the config field that names its id
    published_only = False  # only the published prompt string is supported
    published_is_chat = False  # the published prompt is the chat template's rendering
    published_adds_bos = False  # the published string is tokenised with special tokens

    def __init__(
        self, model: Any, tokenizer: Any, options: Any, system_message: str | None
    ) -> None:
        self.model = model
        self.config = model.config
        self.tok = tokenizer
        self.options = options
        self.system_message = system_message
        p = next(model.parameters())
        self.device, self.dtype = p.device, p.dtype

    # -- tokens -------------------------------------------------------------------------
    @property
    def vision_id(self) -> int:
        """The token id the model scatters visual features into."""
        return int(getattr(self.config, self.vision_id_field))

    def check_tokens(self) -> None:
        """The tokenizer's vision token must be the id the model scatters features into."""
        tid = self.token_id(self.vision_token)
        if tid != self.vision_id:
            raise ValueError(
                f"{self.vision_token} is token {tid} but the model expects {self.vision_id} "
                f"(config.{self.vision_id_field})"
            )

    def token_id(self, token: str) -> int:
        """The id of ``token`` in the tokenizer; ``ValueError`` when it has none."""
        tid = self.tok.convert_tokens_to_ids(token)
        if tid is None or tid == getattr(self.tok, "unk_token_id", None):
            raise ValueError(f"tokenizer {self.tok.name_or_path!r} has no token {token!r}")
        return int(tid)

    def expansion(self, info: dict) -> str:
        """What replaces the template's video placeholder."""
        raise NotImplementedError

    def published_text(self, question: str, info: dict) -> str:
        """The published prompt string (unless :attr:`published_is_chat`)."""
        raise NotImplementedError

    def chat_messages(self, question: str) -> list[dict]:
        """``[system?, user: [video, text]]`` for the chat template."""
        msgs: list[dict] = []
        if self.system_message:
            msgs.append(
                {"role": "system", "content": [{"type": "text", "text": self.system_message}]}
            )
        msgs.append(
            {"role": "user", "content": [{"type": "video"}, {"type": "text", "text": question}]}
        )
        return msgs

    # -- pixels -------------------------------------------------------------------------
    def pixel_inputs(self, frames: torch.Tensor) -> tuple[dict, dict]:
        """Model inputs for segments ``(S, F, 3, H, W)`` uint8, and shape info for the text."""
        raise NotImplementedError

    def vision_features(self, pix: dict) -> torch.Tensor:
        """Visual embeddings ``(n_tokens_total, hidden)`` in placeholder order."""
        raise NotImplementedError

    # -- language model -----------------------------------------------------------------
    def embed(self, ids: torch.Tensor, pix: dict | None) -> torch.Tensor:
        """Token embeddings of ``ids``, with the visual features of ``pix`` scattered in."""
        emb = self.model.get_input_embeddings()(ids)
        if pix is None:
            return emb
        mask = ids == self.vision_id
        feats = self.vision_features(pix).to(emb.device, emb.dtype)
        if int(mask.sum()) != feats.shape[0]:
            raise RuntimeError(
                f"{int(mask.sum())} vision placeholders but {feats.shape[0]} features"
            )
        return emb.masked_scatter(mask[..., None], feats)

    def positions(self, ids: torch.Tensor, pix: dict) -> torch.Tensor | None:
        """Position ids of one full prompt ``(L,)``; ``None`` for plain 1-D positions."""
        return None

    def language_model(self) -> Any:
        """The decoder without its output head."""
        return self.model.model.language_model

    def cache_config(self) -> Any:
        """The config the KV cache is built from (:func:`.kv_prefix.dynamic_cache`)."""
        return self.model.config

    def lm(
        self, emb: torch.Tensor, pos: torch.Tensor | None, cache: Any
    ) -> tuple[torch.Tensor, Any]:
        """The decoder over ``emb``: last hidden states and the (extended) cache."""
        from baglm_nb.models.kv_prefix import cache_kwargs, returned_cache

        model = self.language_model()
        out = model(
            inputs_embeds=emb,
            position_ids=pos,
            use_cache=cache is not None,
            **cache_kwargs(model, cache),
        )
        return out.last_hidden_state, returned_cache(out)

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits of hidden states."""
        return self.model.get_output_embeddings()(hidden)

    def full_logits(self, ids: torch.Tensor, pix: dict) -> torch.Tensor:
        """The model's own full forward pass; logits at the last position ``(B, V)``."""
        out = self.model(input_ids=ids, use_cache=False, logits_to_keep=1, **pix)
        return out.logits[:, -1]


def image_part(url: str) -> dict:
    """One image of a served user turn (an OpenAI ``image_url`` content part)."""
    return {"type": "image_url", "image_url": {"url": url}}


@dataclass(frozen=True)
class FamilySpec:
    """Everything about one LMM family; adding a family is one of these (+ its tests).

    Parameters
    ----------
    name
        The family's name (``"qwen2_5_vl"``), the ``family`` of its scores.
    adapter
        Its :class:`Adapter` subclass.
    models
        Its registry rows (:data:`baglm_nb.models.registry.MODELS`).
    model_types
        The config ``model_type`` values of its native (transformers) checkpoints.
    model_class
        The name of its transformers model class (``transformers.<model_class>``).
    options
        The frozen dataclass of its options (:class:`NoOptions` when it has none); the default
        instance holds the published settings.
    preprocess
        Its frame preprocessing, a function of its module: uint8 frames ``(N, 3, H, W)`` (and
        the family's sizes as keywords) -> the model's pixel values, float32; the adapter's
        :meth:`Adapter.pixel_inputs` calls it with the model's sizes and options.
    system_message
        The default system turn of its prompts (``None``: none, or the template's own).
    special_tokens
        The special tokens its tokenizer appends after the 151,643 Qwen BPE tokens, in id order
        (its tiny model's offline tokenizer: :func:`baglm_nb.models.tokenizers.build_tokenizer`).
    chat_template
        The minimal chat template of that offline tokenizer
        (:func:`baglm_nb.models.tokenizers.chatml`); real checkpoints ship their own.
    served_names
        Lower-case fragments of a served model's name that tell this family.
    served_content
        The user turn of a served request: ``(question, image URLs) -> content parts``, the
        frames in the family's published order and count.
    served_pixels
        The ``(min, max)`` pixels per frame its processor gives a frame: the default bounds
        of :class:`baglm_nb.models.served.ServedScorer`'s ``pixels`` (frames resized by
        ``served_frames`` before they are sent); ``None`` sends them as decoded.
    served_frames
        The resize to those bounds: ``(frames (S, F, 3, H, W) uint8, (min, max)) -> frames``,
        the local preprocessing's own resize.
    tiny_config
        The config of its tiny random model: ``(tokenizer, text, vision, vision_layers,
        vision_heads, image_size) -> config`` (the shared sizes in the ``text`` / ``vision``
        dicts; :func:`baglm_nb.models.testing.make_random_scorer`).
    tiny_options
        The options of its tiny model for an ``image_size`` (default: the spec's defaults).
    remote_adapter, remote_model_types
        The adapter of the original repository format (``trust_remote_code``), family name
        ``"<name>-remote"``, and the ``model_type`` values that select it.
    """

    name: str
    adapter: type[Adapter]
    models: tuple[ModelSpec, ...]
    model_types: tuple[str, ...]
    model_class: str
    preprocess: Callable[..., Any]
    special_tokens: tuple[str, ...]
    chat_template: str
    served_names: tuple[str, ...]
    served_content: Callable[[str, Sequence[str]], list[dict]]
    tiny_config: Callable[..., Any]
    options: type = NoOptions
    system_message: str | None = None
    served_pixels: tuple[int, int] | None = None
    served_frames: Callable[[np.ndarray, tuple[int, int]], np.ndarray] | None = None
    tiny_options: Callable[[int], Any] | None = None
    remote_adapter: type[Adapter] | None = None
    remote_model_types: tuple[str, ...] = ()

    @property
    def remote_name(self) -> str | None:
        """The family name of the original repository format, if the family has one."""
        return f"{self.name}-remote" if self.remote_adapter is not None else None


def resized_frames(frames: np.ndarray, size: tuple[int, int], **resize: Any) -> np.ndarray:
    """``(S, F, 3, H, W)`` uint8 frames resized to ``size = (h, w)`` by
    :func:`~baglm_nb.models.preprocess.resize_uint8` (``resize``: its ``mode`` and
    ``antialias``); unchanged when already at ``size``."""
    import numpy as np
    import torch

    from baglm_nb.models.preprocess import resize_uint8

    if tuple(frames.shape[-2:]) == tuple(size):
        return frames
    flat = torch.from_numpy(np.ascontiguousarray(frames.reshape(-1, *frames.shape[2:])))
    return resize_uint8(flat, size, **resize).numpy().reshape(*frames.shape[:3], *size)
