"""``python -m baglm_nb deps``: dependency matrices per task group, and their violation table.

Examples::

    python -m baglm_nb deps --dataset htstep --backend smollm2 --group-limit 3
    python -m baglm_nb deps --dataset htstep --backend transformers --model /models/Llama-3.3-70B \\
        --published-sampling --device cuda
    OPENAI_API_KEY=... python -m baglm_nb deps --dataset crosstask --backend openai \\
        --model gpt-4.1-mini
    python -m baglm_nb deps --dataset htstep --backend openai --model smollm2 \\
        --base-url http://127.0.0.1:8000/v1 --api-key-env LOCAL_KEY
    python -m baglm_nb deps --dataset htstep --backend transformers --model /models/Llama-3.3-70B \\
        --device cuda --engine ray --address auto --num-gpus-per-worker 4
    python -m baglm_nb deps --dataset htstep --backend oracle --out figures/deps/violations
    python -m baglm_nb import published_results/ --dataset htstep   # then:
    python -m baglm_nb deps --dataset htstep --backend imported

LLM back-ends write one matrix per group into ``<cache-root>/deps/<dataset>/<model>/<prompt>/``
and resume a killed run per group (and per pair inside an unfinished group; with ``--engine ray``
the groups fan out over Ray actors, each loading the model once, and a group is the unit of
resume: the driver alone writes the matrices). Every back-end
ends with the violation table (``--thresholds``), also written as CSV + Markdown with ``--out``.
``--backend imported`` reads the authors' matrices once imported with ``python -m baglm_nb
import`` (the one route that imports them). Errors raise (:mod:`baglm_nb.apps.cli.main`'s rule).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from baglm_nb.apps.cli.options import ServerOptions

if TYPE_CHECKING:
    from baglm_nb.core.sources import Dependencies

#: The server defaults of ``--backend openai`` (the published run: 2 log-probabilities).
DEPS_SERVER = ServerOptions(top_logprobs=2, concurrency=1, request_timeout=30.0)

BACKENDS = ("smollm2", "transformers", "openai", "oracle", "imported", "none")


def register(verbs: argparse._SubParsersAction) -> None:
    """Add the ``deps`` verb."""
    from baglm_nb.inputs.datasets import DATASETS
    from baglm_nb.stores.keys import PUBLISHED_LLM

    p = verbs.add_parser(
        "deps",
        help="step dependency matrices (LLM, server, oracle, imported) and violation table",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    p.add_argument("--backend", required=True, choices=BACKENDS)
    p.add_argument("--cache-root", default="data/cache", help="cache root (default data/cache)")
    _add_llm_arguments(p)
    p.add_argument(
        "--llm",
        default=PUBLISHED_LLM,
        help="imported: the LLM given to `python -m baglm_nb import`",
    )
    p.add_argument(
        "--group-limit",
        type=int,
        default=None,
        metavar="N",
        help="only the first N task groups (annotation order)",
    )
    p.add_argument("--group", action="append", help="only this group (repeatable)")
    p.add_argument(
        "--goal",
        choices=["llm", "name"],
        default="llm",
        help="goal text: the published LLM goal (CrossTask: task id) or the task name",
    )
    p.add_argument(
        "--on-error",
        choices=["raise", "continue"],
        default="raise",
        help="stop at the first failed pair (default) or go on with the next group",
    )
    p.add_argument(
        "--thresholds", type=float, nargs="+", default=None, help="default 0.0 0.1 ... 1.0"
    )
    p.add_argument(
        "--scope", choices=["group", "task"], default="group", help="violations: unit of a task"
    )
    p.add_argument("--out", help="write the violation table to OUT.csv and OUT.md")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    from baglm_nb.apps.cli.score import add_engine_arguments

    add_engine_arguments(p, "task groups")
    p.set_defaults(func=_deps)


def _add_llm_arguments(p: argparse.ArgumentParser) -> None:
    """The options of an LLM the verb runs (``--backend transformers`` or ``openai``)."""
    p.add_argument("--model", help="transformers: folder or HF id; openai: model name")
    p.add_argument("--name", help="model name in the cache key (default from --model)")
    p.add_argument("--gguf-file", help="transformers: GGUF file inside --model")
    p.add_argument("--device", default="cpu", help="transformers: torch device (default cpu)")
    p.add_argument("--batch-size", type=int, default=None, help="transformers: prompts per pass")
    p.add_argument(
        "--chunk-size", type=int, default=None, help="pairs per checkpoint of an unfinished group"
    )
    p.add_argument(
        "--published-sampling",
        action="store_true",
        help="transformers: P(Yes) under T=0.6, top-k 50, top-p 0.9 (reference §4.3)",
    )
    p.add_argument(
        "--system-prompt",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="send the §4.1 system message (default: yes for transformers, no for openai, "
        "as published)",
    )
    DEPS_SERVER.add_arguments(p.add_argument_group("served LLM (--backend openai)"))


def _backend(args: argparse.Namespace):
    kw = {}
    if args.chunk_size is not None:
        kw["chunk_size"] = args.chunk_size
    if args.system_prompt is not None:
        kw["system_prompt"] = args.system_prompt
    if args.batch_size is not None and args.backend != "openai":
        kw["batch_size"] = args.batch_size
    if args.backend == "smollm2":
        from baglm_nb.models import llm_local  # torch: imported by the local back-ends only

        if args.name:
            kw["name"] = args.name
        return llm_local.load_smollm2(
            published_sampling=args.published_sampling, device=args.device, **kw
        )
    if args.backend == "transformers":
        if not args.model:
            raise ValueError("--backend transformers needs --model FOLDER_OR_ID")
        from baglm_nb.models import llm_local

        return llm_local.TransformersBackend.from_pretrained(
            args.model,
            gguf_file=args.gguf_file,
            name=args.name,
            device=args.device,
            published_sampling=args.published_sampling,
            **kw,
        )
    if not args.model:
        raise ValueError("--backend openai needs --model NAME")
    from baglm_nb.models import llm_openai

    server = ServerOptions.from_args(args)
    return llm_openai.OpenAIBackend(
        args.model,
        connection=server.connection(),
        top_logprobs=server.top_logprobs,
        concurrency=server.concurrency,
        **kw,
    )


def _deps(args: argparse.Namespace) -> int:
    import json

    from baglm_nb.analyses import violations as viol
    from baglm_nb.apps.cli.options import check_range
    from baglm_nb.core import sources
    from baglm_nb.models import dependencies as dep

    for value in args.thresholds or ():
        check_range("--thresholds", value, 0, 1)
    check_range("--group-limit", args.group_limit, 1)
    progress = not args.no_progress
    source: object
    if args.backend in ("oracle", "none"):
        source = args.backend
    elif args.backend == "imported":
        source = sources.dependencies(
            args.dataset, "imported", root=args.cache_root, llm=args.llm
        ).source
    else:
        try:
            summary = _build(args, progress)
        except dep.DependencyError as exc:
            raise RuntimeError(f"{exc}; {RESUME}") from exc
        print(json.dumps({k: summary[k] for k in ("path", "groups", "rescored_stale")}, indent=2))
        print(
            f"computed {len(summary['computed'])}, reused {len(summary['reused'])}, "
            f"failed {len(summary['failed'])}"
        )
        source = sources.dependencies(args.dataset, summary["path"]).source
        if summary["failed"]:
            failed = summary["failed"]
            raise RuntimeError(
                f"{len(failed)} task group(s) failed: {'; '.join(failed.values())}; {RESUME}"
            )

    videos = _videos_with_matrices(args, source)
    thresholds = args.thresholds if args.thresholds else viol.THRESHOLDS
    table = viol.violations(source, videos, thresholds, scope=args.scope)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    if args.out:
        from baglm_nb.analyses.tables import write_table
        from baglm_nb.apps.cli.options import run_parameters

        label = table["source"].iloc[0]
        title = f"Dependency violations, {args.dataset}, D = {label}"
        write_table(table, args.out, title=title, params=run_parameters(args))
        print(f"written {args.out}.csv and {args.out}.md")
    return 0


#: What a failed LLM run keeps.
RESUME = "finished groups and pairs are kept: run the same command again to resume"


def _build(args: argparse.Namespace, progress: bool) -> dict:
    """:func:`~baglm_nb.models.dependencies.build_dependencies` with ``--engine``."""
    import functools

    from baglm_nb.apps.cli.options import stdout_to_stderr
    from baglm_nb.apps.cli.score import engine_from_args
    from baglm_nb.models import dependencies as dep
    from baglm_nb.models.ray_pool import WorkerStartError

    engine = engine_from_args(args)
    if engine == "local":
        backend = _backend(args)
    elif args.backend == "openai":
        from baglm_nb.models.scoring import SERVED_ON_RAY

        raise ValueError(SERVED_ON_RAY)
    else:
        backend = functools.partial(_backend, args)  # each worker loads the model
    try:
        with stdout_to_stderr(engine != "local"):
            return dep.build_dependencies(
                args.dataset,
                backend,
                args.cache_root,
                groups=args.group,
                group_limit=args.group_limit,
                goal=args.goal,
                on_error=args.on_error,
                show_progress=progress,
                engine=engine,
            )
    except WorkerStartError as exc:
        raise ValueError(str(exc)) from None


def _videos_with_matrices(args: argparse.Namespace, source: Dependencies) -> list:
    """The videos of the selected groups (``--group``, ``--group-limit``) that have a matrix."""
    from baglm_nb.inputs.datasets import load_dataset

    videos = load_dataset(args.dataset)
    keys = list(dict.fromkeys(v.group for v in videos))
    if args.group:
        keys = [g for g in keys if g in args.group]
    if args.group_limit is not None:
        keys = keys[: args.group_limit]
    if not isinstance(source, str):
        stored = set(source.groups())
        keys = [g for g in keys if g in stored]
    selected = set(keys)
    return [v for v in videos if v.group in selected]
