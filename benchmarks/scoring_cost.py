"""Cost per segment of VSG + K progress prompts: the published recipe vs the workbench.

For S segments of 4 frames the scorer answers the VSG question and the K = ``--steps`` progress
questions:

* published recipe: K + 1 separate full forward passes per batch of segments, each encoding the
  frames again (``shared_prefix=False``, reference-protocol §2.4, §3.2);
* workbench: **one** vision encoding and one shared prefix for all K + 1 questions, the progress
  prompts' common text once more per segment, then each question kind's suffixes in one batched
  pass over the cached prefix (:mod:`baglm_nb.models.passes`), several segments per pass.

**CPU (default).** A tiny randomly initialised InternVL-architecture model (label "random-init";
its scores mean nothing), with the real layout of the inputs: 448-pixel frames, 256 visual tokens
per frame, 1,024 per segment, the real Qwen BPE tokenizer and prompts; language model hidden 256,
4 layers. Prints the seconds per segment of both (best of ``--repeats`` interleaved runs; process
CPU times too, which other load on a shared machine disturbs less), their ratio (goal >= 8x),
the largest relative difference of the outputs (goal <= 1e-4) and the token accounting that bounds
the ratio: the published recipe runs every question's full prompt through the language model,
the workbench runs the shared prefix once plus every question's own suffix, and the suffixes
cannot be shared (the progress prompt has about 100 tokens after the step).

**GPU (``--device cuda --size full``).** A real-size random-init InternVL3-8B (``--family
internvl``) or Qwen2.5-VL-7B (``--family qwen2_5_vl``) built from its published configuration in
bfloat16 with SDPA attention (no weights needed), 16 segments per pass; prints seconds per
segment and segments per second per GPU (goal <= 0.25 s per segment on an H100; the paper: 2.1 s),
and with ``--compare`` the published recipe on the same model. On a machine without CUDA it says
so and exits 2. ``--size full --check`` builds the full model on the meta device (no memory, no
GPU) and prints its parameter count. ``--size full --dry-run`` runs the whole GPU path on the CPU
with the published architecture at toy widths (float32; 4 segments), so that a change that would
break it shows without a GPU (``tests/test_benchmark_paths.py``).

    .venv/bin/python benchmarks/scoring_cost.py [--segments 2] [--steps 10] [--threads 1]
    .venv/bin/python benchmarks/scoring_cost.py --device cuda --size full [--family qwen2_5_vl]
    .venv/bin/python benchmarks/scoring_cost.py --size full --dry-run --compare  # CPU, toy widths
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import torch

    from baglm_nb.models.engine import TransformersScorer

NEEDS_CUDA = (
    "--size full needs CUDA (a GPU): run it with --device cuda on a GPU machine; --check builds "
    "the model on the meta device only, --dry-run runs this path at toy widths on the CPU"
)
GOAL = "Make Nigerian Style Jollof Rice"
BASE_STEPS = [
    "wash the rice",
    "chop the onions and peppers",
    "blend tomatoes and peppers",
    "heat oil in a pot",
    "fry the onions",
    "add the tomato blend and fry",
    "season with stock and spices",
    "add the rice and water",
    "cover and simmer until cooked",
    "stir and serve",
]
NAMES = {"internvl": "InternVL3-8B", "qwen2_5_vl": "Qwen2.5-VL-7B"}


def _import_stack() -> None:
    """numpy, torch and the workbench's model modules, imported once a run needs them (seconds
    of CPU), not to refuse a command line."""
    global np, torch, RANDOM_INIT, TransformersScorer, family_spec, model_class
    global make_random_scorer, build_tokenizer
    import numpy as np
    import torch

    from baglm_nb.models.engine import RANDOM_INIT, TransformersScorer
    from baglm_nb.models.families import family_spec
    from baglm_nb.models.registry import model_class
    from baglm_nb.models.testing import make_random_scorer
    from baglm_nb.models.tokenizers import build_tokenizer


def steps_of(k: int) -> list[str]:
    """K distinct step texts."""
    n = len(BASE_STEPS)
    return [BASE_STEPS[i % n] + ("" if i < n else f" ({i // n + 1})") for i in range(k)]


# --dry-run: the published architectures at toy widths (every other setting as published)
TOY_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
TOY_VISION = {
    "internvl": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
    },
    "qwen2_5_vl": {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [1],
    },
}


def full_config(family: str, tok, *, toy: bool = False) -> object:
    """The published configuration of InternVL3-8B(-hf) or Qwen2.5-VL-7B-Instruct (vocabulary:
    the offline tokenizer's, within a few hundred tokens of the real one); ``toy``: the same
    architecture at the widths of :data:`TOY_TEXT` and :data:`TOY_VISION` (``--dry-run``)."""
    import transformers

    text = {
        "vocab_size": len(tok),
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        **(TOY_TEXT if toy else {}),
    }
    vision = TOY_VISION[family] if toy else {}
    # mrope sections (Qwen2.5-VL) split half the head width: [16, 24, 24] of 64 as published
    half = text["hidden_size"] // text["num_attention_heads"] // 2
    mrope = [16, 24, 24] if not toy else [half - 2 * (half // 3), half // 3, half // 3]
    if family == "internvl":
        return transformers.InternVLConfig(
            vision_config={
                "hidden_size": 1024,
                "intermediate_size": 4096,
                "num_hidden_layers": 24,
                "num_attention_heads": 16,
                "image_size": [448, 448],
                "patch_size": [14, 14],
                "layer_norm_eps": 1e-6,
                **vision,
            },  # fmt: skip
            text_config={
                "model_type": "qwen2",
                **text,
                "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
            },
            image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
            downsample_ratio=0.5,
            tie_word_embeddings=False,
        )
    return transformers.Qwen2_5_VLConfig(
        vision_config={
            "depth": 32,
            "hidden_size": 1280,
            "intermediate_size": 3420,
            "num_heads": 16,
            "out_hidden_size": 3584,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "fullatt_block_indexes": [7, 15, 23, 31],
            "tokens_per_second": 2,
            **vision,
        },
        text_config={
            **text,
            "max_position_embeddings": 128000,
            "rope_parameters": {"rope_type": "default", "mrope_section": mrope, "rope_theta": 1e6},
        },
        video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"),
    )


def full_scorer(
    family: str, device: str, batch: int, k: int, *, toy: bool = False
) -> TransformersScorer:
    """A real-size random-init model of ``family`` in bfloat16 with SDPA, built on ``device``
    (``toy``: at toy widths, in float32)."""
    tok = build_tokenizer(family_spec(family))
    cfg = full_config(family, tok, toy=toy)
    cfg.baglm_random_init = True
    dtype = torch.float32 if toy else torch.bfloat16
    with torch.device(device):
        net = model_class(family)._from_config(cfg, attn_implementation="sdpa", dtype=dtype)
    net = net.eval()
    net._baglm_random_init = True
    return TransformersScorer(
        net,
        tok,
        family=family,
        model_id=f"{RANDOM_INIT}/{NAMES[family]}-{'toy-width' if toy else 'size'}",
        label=RANDOM_INIT,
        segment_batch_size=batch,
        suffix_batch_size=batch * (k + 1),
    )


def token_accounting(scorer: TransformersScorer, frames: torch.Tensor, steps: list[str]) -> str:
    """Language-model tokens per segment of both recipes (what bounds their ratio)."""
    from baglm_nb.models.kv_prefix import shared_length
    from baglm_nb.models.prompts import format_choices, get_prompt

    _, info = scorer.adapter.pixel_inputs(frames[:1])
    labels = scorer.labels(len(steps) + 1)
    vsg = get_prompt("vsg").format(goal=GOAL, choices=format_choices(steps, labels))
    prog = [get_prompt("prog").format(goal=GOAL, step=s) for s in steps]
    ids = [scorer.prompt_ids(q, info) for q in [vsg, *prog]]
    plen = shared_length(ids)
    plen_prog = shared_length(ids[1:])
    published = sum(len(q) for q in ids)
    work = len(ids[0]) + (plen_prog - plen) + sum(len(q) - plen_prog for q in ids[1:])
    return (
        f"language-model tokens per segment: published {published:,} (K+1 = {len(ids)} prompts "
        f"of ~{published // len(ids):,}), workbench {work:,} (shared prefix {plen:,}, VSG suffix "
        f"{len(ids[0]) - plen}, progress text {plen_prog - plen} + {len(prog)} suffixes of "
        f"~{(sum(map(len, ids[1:])) - len(prog) * plen_prog) // len(prog)}): "
        f"{published / work:.1f}x; vision encodings {len(ids)} vs 1"
    )


def _check(a: np.ndarray, b: np.ndarray, name: str) -> float:
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=0, err_msg=name)
    return float(np.abs(a / b - 1).max())


def timed(scorer: TransformersScorer, shared: bool, frames, steps):
    """(wall s, process CPU s, result) of one call scoring VSG + K progress."""
    scorer.shared_prefix = shared
    if scorer.device.type == "cuda":
        torch.cuda.synchronize()
    w0, c0 = time.perf_counter(), time.process_time()
    out = scorer.score_segments(frames, GOAL, steps)
    if scorer.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - w0, time.process_time() - c0, out


def run_cpu(args: argparse.Namespace) -> None:
    """The tiny-model comparison on CPU."""
    tok = build_tokenizer(family_spec("internvl"))
    scorer = make_random_scorer(
        "internvl",
        tok,
        hidden_size=256,
        num_layers=4,
        num_heads=4,
        vision_hidden_size=64,
        vision_layers=2,
        image_size=448,
        seed=0,
        segment_batch_size=args.segments,
        suffix_batch_size=args.segments * (args.steps + 1),
    )
    g = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (args.segments, 4, 3, 360, 640), generator=g, dtype=torch.uint8)
    steps = steps_of(args.steps)
    n_vis = scorer.adapter.tokens_per_frame()
    print(
        f"model {scorer.model_id} (label {scorer.label}): {n_vis} visual tokens per frame, 4 "
        f"frames, K={args.steps}, {args.segments} segments, {torch.get_num_threads()} "
        "thread(s)"
    )
    print(token_accounting(scorer, frames, steps))
    scorer.score_segments(frames[:1], GOAL, steps[:2])  # warm-up (lazy inits, tokenisation)
    best = {True: (np.inf, np.inf, None), False: (np.inf, np.inf, None)}
    for _ in range(args.repeats):  # interleaved, best of each: robust to other load
        for shared in (False, True):
            w, c, out = timed(scorer, shared, frames, steps)
            bw, bc, _ = best[shared]
            best[shared] = (min(bw, w), min(bc, c), out)
    (wn, cn, naive), (ws, cs, work) = best[False], best[True]
    d = max(_check(work.vsg, naive.vsg, "vsg"), _check(work.progress, naive.progress, "progress"))
    per = args.segments
    print(
        f"published recipe (K+1 full passes): {wn / per:7.3f} s/segment wall, {cn / per:7.3f} s CPU"
    )
    print(f"workbench (one encoding + prefix):  {ws / per:7.3f} s/segment wall, "
          f"{cs / per:7.3f} s CPU; phases of the last call: "
          + ", ".join(f"{k} {v / per:.3f} s" for k, v in work.timings.items()))  # fmt: skip
    print(
        f"ratio published / workbench: wall {wn / ws:.2f}x, CPU {cn / cs:.2f}x (goal >= 8x); "
        f"outputs agree to {d:.1e} relative (goal <= 1e-4)"
    )


def run_full(args: argparse.Namespace) -> int:
    """The real-size model on CUDA (or only its parameter count with ``--check``)."""
    if args.check:
        with torch.device("meta"):
            tok = build_tokenizer(family_spec(args.family))
            net = model_class(args.family)._from_config(full_config(args.family, tok))
        n = sum(p.numel() for p in net.parameters())
        print(f"{NAMES[args.family]} configuration: {n / 1e9:.2f} B parameters (meta device)")
        return 0
    cuda = args.device == "cuda" and torch.cuda.is_available()
    if not cuda and not args.dry_run:
        print(NEEDS_CUDA, file=sys.stderr)
        return 2
    device = "cuda" if cuda else "cpu"
    scorer = full_scorer(args.family, device, args.batch, args.steps, toy=args.dry_run)
    g = torch.Generator().manual_seed(0)
    frames = torch.randint(0, 256, (args.segments, 4, 3, 360, 640), generator=g, dtype=torch.uint8)
    steps = steps_of(args.steps)
    if args.dry_run:
        print(
            "DRY RUN: the published architecture at toy widths, float32 (checks this code "
            "path only; its timings say nothing of a real-size model)"
        )
    where = torch.cuda.get_device_name() if cuda else "CPU"
    print(
        f"{scorer.model_id} (label {scorer.label}, {scorer.model.dtype}, SDPA) on {where}: "
        f"K={args.steps}, {args.segments} segments, {args.batch} per pass"
    )
    print(token_accounting(scorer, frames, steps))
    timed(scorer, True, frames[: args.batch], steps)  # warm-up
    w, _, out = timed(scorer, True, frames, steps)
    s = w / args.segments
    phases = ", ".join(f"{k} {v / args.segments:.3f} s" for k, v in out.timings.items())
    per = "per GPU (goal <= 0.25 s on an H100; the paper: 2.1 s)" if cuda else "on the CPU"
    print(f"workbench: {s:.3f} s/segment, {1 / s:.2f} segments/s {per}; phases: {phases}")
    if cuda:
        print(f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    if args.compare:
        n = args.batch
        wn, _, naive = timed(scorer, False, frames[:n], steps)
        d = max(
            _check(out.vsg[:n], naive.vsg, "vsg"),
            _check(out.progress[:n], naive.progress, "progress"),
        )
        print(
            f"published recipe: {wn / n:.3f} s/segment: ratio {wn / n / s:.2f}x; outputs "
            f"agree to {d:.1e} relative"
        )
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--size", default="tiny", choices=["tiny", "full"])
    ap.add_argument("--family", default="internvl", choices=sorted(NAMES))
    ap.add_argument("--segments", type=int, default=None, help="default 2 (tiny), 64 (full)")
    ap.add_argument("--batch", type=int, default=16, help="full: segments per pass")
    ap.add_argument("--steps", type=int, default=10, help="K")
    ap.add_argument("--repeats", type=int, default=3, help="tiny: timed runs (best is kept)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch default)")
    ap.add_argument("--compare", action="store_true", help="full: also the published recipe")
    ap.add_argument("--check", action="store_true", help="full: parameter count on meta device")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="full: the same path at toy widths on the CPU (checks the code only)",
    )
    args = ap.parse_args()
    if args.dry_run and args.size != "full":
        print("--dry-run goes with --size full", file=sys.stderr)
        return 2
    if args.size == "full" and args.device != "cuda" and not (args.check or args.dry_run):
        print(NEEDS_CUDA, file=sys.stderr)  # known before torch is imported
        return 2
    if args.size == "tiny" and args.device == "cuda":
        print("the tiny model is the CPU benchmark; use --size full on CUDA", file=sys.stderr)
        return 2
    _import_stack()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.size == "full":
        args.segments = args.segments or (4 if args.dry_run else 64)
        args.batch = min(args.batch, args.segments)
        return run_full(args)
    args.segments = args.segments or 2
    run_cpu(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
