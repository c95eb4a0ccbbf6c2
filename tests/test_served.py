"""The served scorer against llama.cpp's real server on 127.0.0.1, with images.

The tiny random-init Qwen2.5-VL of ``baglm_nb.models.testing`` is converted to GGUF (model +
mmproj, float32; :func:`~baglm_nb.models.testing.random_gguf`, cached after the first run) and
served by ``tests/gguf_server.py`` (llama.cpp's own C++ server from the ``xllamacpp`` wheel, the
GGUF's own chat template through jinja). One server for the module (restarted once by the kill
test), with an API key, serving the model from a path of its own (a link to the cached file), so
that the same-path test can save other weights there. Its full-vocabulary responses are large
(151,665 logprobs, about 14 MB, a few seconds of CPU each on both sides), so the tests ask for
few of them. The model is random: these tests check the mechanics and the fidelity to the same
weights run locally, not answers.
Every server computes on one thread (``threads=1``): the model is tiny, and two threads would
spin at each step of its graph on a busy machine.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch
from clips import coin_annotations, short_clips
from gguf_server import ServerProcess

from baglm_nb.apps.cli.main import main
from baglm_nb.models.families.qwen2_5_vl import preprocess_qwen25vl
from baglm_nb.models.openai_client import ConnectionOptions, ServerError
from baglm_nb.models.prompts import format_choices, get_prompt
from baglm_nb.models.questions import Question, ScoringError, build_questions
from baglm_nb.models.scoring import score_dataset
from baglm_nb.models.served import ServedScorer
from baglm_nb.models.served_checks import PROBE_QUESTION
from baglm_nb.models.testing import make_random_scorer, random_gguf
from baglm_nb.stores.scores import ScoreCache

# tiny models and small tensors: one torch thread (two spin against each other on a busy machine)
pytestmark = [pytest.mark.server, pytest.mark.usefixtures("one_torch_thread")]

KEY_ENV = "BAGLM_TEST_SERVED_KEY"
KEY = "sk-served-right-0b7d"
MODEL = "random-init/qwen2_5_vl-tiny"  # the name tells the family: qwen2_5_vl
GOAL = "make tea"
STEPS = ["Boil the water.", "Pour the water."]
SERVER_MISSING = (
    "xllamacpp is not installed: pip install -e '.[server-tests]'"
    if importlib.util.find_spec("xllamacpp") is None
    else None
)


def place(weights: Path, path: Path) -> None:
    """Put ``weights`` at ``path`` as a save does: a new file (a hard link, else a copy) renamed
    over it, so that a server that loaded the old file keeps it."""
    new = path.with_name(path.name + ".new")
    new.unlink(missing_ok=True)
    try:
        os.link(weights, new)
    except OSError:  # another filesystem
        shutil.copyfile(weights, new)
    os.replace(new, path)


class Llama:
    """The module's llama.cpp server: the tiny model (at ``model``, a path of the module's) + its
    mmproj, an API key, 2 slots."""

    def __init__(self, logs: Path) -> None:
        self.weights, self.mmproj = random_gguf("qwen2_5_vl")
        self.model = logs / "model.gguf"
        place(self.weights, self.model)
        self.logs = logs
        self.proc: ServerProcess | None = None
        self.start()

    def start(self) -> None:
        log = self.logs / f"server{len(list(self.logs.glob('*.log')))}.log"
        self.proc = ServerProcess(
            self.model, log, api_key=KEY, mmproj=self.mmproj, parallel=2, n_ctx=2048, threads=1
        ).wait_ready()

    @property
    def url(self) -> str:
        return self.proc.url

    def post(self, path: str, body: dict) -> dict:
        """A llama.cpp endpoint outside /v1 (``/apply-template``, ``/tokenize``)."""
        req = urllib.request.Request(
            self.url.removesuffix("/v1") + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def kill(self) -> None:
        self.proc.kill()


@pytest.fixture(scope="module")
def module_llama(tmp_path_factory):
    if SERVER_MISSING:
        pytest.fail(SERVER_MISSING + " (or make setup)")
    server = Llama(tmp_path_factory.mktemp("served-logs"))
    yield server
    server.kill()


@pytest.fixture
def llama(module_llama):
    """The module's server, restarted if a test killed it."""
    if module_llama.proc.proc.poll() is not None:
        module_llama.start()
    return module_llama


@pytest.fixture(scope="module")
def twin():
    """The GGUF's local twin (3 vision layers), built once for the tests that compare with it
    (they only read it)."""
    return make_random_scorer("qwen2_5_vl", vision_layers=3)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def served(url: str, **kw) -> ServedScorer:
    kw.setdefault("concurrency", 2)
    conn = ConnectionOptions(url, KEY_ENV, timeout=120, max_attempts=2, backoff=0.1)
    return ServedScorer(MODEL, connection=conn, **kw)


def test_text_prompt_matches_transformers_token_for_token(llama, key, twin):
    """The same weights, local (transformers) and served: the rendered prompt, its tokens and
    the logprobs of every option label and digit (text prompts: the image paths differ).

    Read with the labels strategy (what ``auto`` takes on llama.cpp), each prompt evaluated
    whole (``cache_prompt=False``): its answers are the full-vocabulary ones to float rounding
    (:func:`test_labels_equals_full_vocab_on_the_same_server`), in responses of under 1 KB
    instead of 14 MB (each of those costs seconds of CPU on both sides)."""
    local = twin
    labels = local.labels(len(STEPS) + 1)
    questions, _, _ = build_questions(
        GOAL,
        STEPS,
        labels,
        prompt="vsg",
        vsg_prompt="multiple_choice",
        progress=True,
        next_step=False,
    )
    questions = questions[:2]  # the VSG question (A, B, C) and one progress question (digits)
    # one request at a time: llama.cpp's results depend slightly on what shares a batch
    scorer = served(llama.url, strategy="labels", concurrency=1, cache_prompt=False)
    remote = scorer._ask(questions, [[]])  # one "segment" without images
    for q, p_served in zip(questions, remote, strict=True):
        text = local.render_chat([{"role": "user", "content": [{"type": "text", "text": q.text}]}])
        rendered = llama.post("/apply-template", {"messages": scorer.messages(q.text)})["prompt"]
        assert rendered == text and rendered.endswith("<|im_start|>assistant\n")
        ids = local.tokenizer(text, add_special_tokens=False)["input_ids"]
        tokens = llama.post("/tokenize", {"content": rendered, "parse_special": True})["tokens"]
        assert tokens == ids
        x = torch.tensor([ids])
        with torch.no_grad():
            logits = local.model(input_ids=x, logits_to_keep=1).logits[:, -1]
        target = torch.tensor([local._answer_ids(q.kind, labels)])
        p_local = local.answer_probs(logits, x, target)[0]
        assert p_served.shape == (1, len(q.answers))
        np.testing.assert_allclose(np.log(p_served[0]), np.log(p_local), atol=0.02)


def test_server_killed_mid_run_then_resumed_with_the_cli(llama, key, tmp_path, capsys):
    """Video 1 is scored, the server dies during video 2: the run stops with a clear error and
    keeps video 1; ``python -m baglm_nb score --backend openai`` (in process) resumes with
    video 2 only."""
    uids = ["v1", "v2"]
    videos = short_clips(tmp_path / "videos", uids, 2.2, size="112:84")  # 1 segment each
    ann = coin_annotations(tmp_path / "ann", uids, STEPS[:1], 2.2)  # K = 1: options A, B
    root = tmp_path / "cache"
    asked: list[str] = []

    class KillDuringSecondVideo(ServedScorer):
        def question_probs(self, question, images=()):
            if question.text != PROBE_QUESTION:  # not the canary
                asked.append(question.kind)
            if len(asked) == 3:  # v1: VSG + progress; v2: its first question
                llama.kill()
            return super().question_probs(question, images)

    first = KillDuringSecondVideo(
        MODEL,
        connection=ConnectionOptions(llama.url, KEY_ENV, max_attempts=2, backoff=0.1),
        concurrency=1,
    )
    with pytest.raises(ServerError, match=r"cannot connect .*\(gave up after 2 attempts\)"):
        score_dataset("coin", videos, first, root=root, annotations=ann, show_progress=False)
    cache = ScoreCache.open(next(root.glob("scores/coin/*/*/*")))
    assert cache.uids() == ["v1"] and cache.key.model == f"openai:{MODEL}, labels"  # auto
    v1 = cache.file("v1").read_bytes()
    assert not (cache.path / "failures.json").exists()  # a dead server is not the video's fault
    assert not [p for p in cache.path.rglob("*") if p.name.startswith(".tmp")]

    llama.start()  # a fresh server on a new port; the cache does not depend on the URL
    rc = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(videos),
            "--annotations",
            str(ann),
            "--cache-root",
            str(root),
            "--backend",
            "openai",
            "--model",
            MODEL,
            "--base-url",
            llama.url,
            "--api-key-env",
            KEY_ENV,
            "--concurrency",
            "2",
            "--no-progress",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    summary = json.loads(out.out)
    assert summary["scored"] == 1 and summary["already_cached"] == 1 and not summary["failed"]
    assert summary["label"] == "served" and summary["cache"] == str(cache.path)
    assert Path(summary["cache"]).parent.parent.name.endswith(f"labels@{cache.key.weights}")
    assert cache.uids() == ["v1", "v2"]
    assert cache.file("v1").read_bytes() == v1  # not redone
    scores = cache.read_video("v2")
    assert scores.vsg.shape == (1, 2) and scores.progress.shape == (1, 1, 10)
    for arr in (scores.vsg, scores.progress):
        assert np.isfinite(arr).all() and (arr > 0).all() and (arr < 1).all()
    assert scores.vsg.sum() < 0.5  # raw full-vocabulary probabilities of a random model
    assert {"decode_s", "score_s"} <= set(scores.timings)  # one call per batch: VSG + progress


def test_wrong_key_is_a_clear_error_never_printed(llama, monkeypatch, tmp_path, capsys, caplog):
    wrong = "sk-WRONG-served-51c3e8"
    monkeypatch.setenv(KEY_ENV, wrong)
    caplog.set_level(logging.DEBUG)  # the openai client's debug log included
    videos = short_clips(tmp_path / "videos", ["v1"], 2.2)
    ann = coin_annotations(tmp_path / "ann", ["v1"], STEPS, 2.2)
    rc = main(
        [
            "score",
            "--dataset",
            "coin",
            "--video-dir",
            str(videos),
            "--annotations",
            str(ann),
            "--cache-root",
            str(tmp_path / "cache"),
            "--model",
            f"openai:{MODEL}",
            "--base-url",
            llama.url,
            "--api-key-env",
            KEY_ENV,
            "--no-progress",
        ]
    )
    out = capsys.readouterr()
    assert rc == 1
    assert f"error: the server at {llama.url} rejected the API key from ${KEY_ENV} (HTTP 401)" in (
        out.err
    )
    assert wrong not in out.out + out.err + caplog.text and "Traceback" not in out.err
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.parquet"))
    with pytest.raises(ServerError) as info:
        _ = served(llama.url).strategy
    assert wrong not in str(info.value) and wrong not in repr(served(llama.url))


def test_labels_equals_full_vocab_on_the_same_server(llama, key):
    """The labels strategy (each answer forced with logit_bias) against full-vocab on the same
    requests, one at a time, with 4 images: the same raw full-vocabulary probabilities in far
    smaller responses. Full-vocab is read once, with llama.cpp's prompt cache off: every prompt
    is evaluated whole, so it is the exact reference (each of its responses costs seconds of
    CPU on both sides). Labels with the cache off agree with it to float rounding; with it on
    (the default), a repeated prompt's last token is computed alone, which moves a logprob by
    up to 0.02."""
    rng = np.random.default_rng(7)
    frames = rng.integers(0, 256, (1, 4, 3, 84, 112), dtype=np.uint8)
    labels = ["A", "B", "C"]
    questions, _, _ = build_questions(
        GOAL,
        STEPS,
        labels,
        prompt="vsg",
        vsg_prompt="multiple_choice",
        progress=True,
        next_step=False,
    )
    questions = questions[:2]  # the VSG question (A, B, C) and one progress question (digits)
    full = served(llama.url, strategy="full-vocab", concurrency=1, cache_prompt=False)
    assert full.strategy == "full-vocab" and full.stats["requests"] == 2  # the probe: text, image
    images = full._encode(frames)
    p_full = full._ask(questions, images)
    assert full.stats["requests"] == 2 + 2
    assert full.stats["bytes"] / 2 > 10_000_000  # about 14 MB each
    for cache_prompt, log_tol in ((False, 1e-4), (True, 0.03)):
        lab = served(llama.url, strategy="auto", concurrency=1, cache_prompt=cache_prompt)
        assert lab.strategy == "labels", lab.strategy_reason
        probe = lab.stats["requests"]
        p_lab = lab._ask(questions, images)
        for a, b in zip(p_lab, p_full, strict=True):
            assert a.shape == b.shape and (a > 0).all() and (a < 1).all()
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
            big = b > 1e-4  # none for this random model: its answers are all below 1e-4
            np.testing.assert_allclose(np.log(a[big]), np.log(b[big]), atol=1e-3)
            np.testing.assert_allclose(np.log(a), np.log(b), atol=log_tol)
        assert lab.stats["requests"] - probe == 3 + 10
        assert lab.stats["bytes"] / lab.stats["requests"] < 5_000  # about 0.8 KB, the probe 3 KB


def test_labels_refuses_a_label_of_two_tokens_with_its_ids(llama, key):
    """Beyond Z the Excel labels are not all one token: 'BQ' is 2 on this tokenizer."""
    lab = served(llama.url, strategy="labels", concurrency=1)
    with pytest.raises(ScoringError, match=r"label 'BQ' is 2 tokens \[33, 48\] on the server"):
        lab.question_probs(Question("vsg", "Answer with a letter.", ("A", "BQ")))
    assert lab.token_id("A") == 32 and lab.token_id("AZ") == 23563  # one token each


def test_fingerprint_follows_the_served_model(llama, key, twin):
    """The served fingerprint digests /v1/models' description of the GGUF (its path, size,
    parameter count) and the strategy; the two tiny local Qwen2.5-VL twins differ too."""
    a, b = served(llama.url, strategy="labels"), served(llama.url, strategy="full-vocab")
    meta = a._metadata()
    assert meta["owned_by"] == "llamacpp" and meta["meta"]["n_vocab"] == 151665
    assert "n_ctx" not in meta["meta"]  # a launch setting, not the weights
    assert a.fingerprint == served(llama.url, strategy="labels").fingerprint
    assert a.fingerprint != b.fingerprint
    two = make_random_scorer("qwen2_5_vl", twin.tokenizer)  # 2 vision layers
    three = twin  # the GGUF export's twin
    assert two.model_id == three.model_id and two.fingerprint != three.fingerprint


#: Largest |served - local| log-prob with images (options and digits) that the image test
#: accepts: the measured gap of llama.cpp's mtmd against transformers on the same weights and
#: pixels (up to 0.135, four images' digits), with room for other CPUs (README, served
#: section; the cause is not found, so the 0.02 goal is not met).
IMAGE_TOL = 0.2


def local_image_logprobs(local, scorer: ServedScorer, question: str, frames, answers):
    """Transformers' image path (not the video one) on ``frames`` at their own size (multiples of
    28): the chat template with one image part per frame, each image's pad token repeated for
    its merged patches, the pixels of :func:`preprocess_qwen25vl` (one frame, repeated in time as
    the image processor does), and the first-token logprobs of ``answers``."""
    content = [{"type": "image"} for _ in frames] + [{"type": "text", "text": question}]
    system = [{"role": "system", "content": [{"type": "text", "text": scorer.system_message}]}]
    system = system if scorer.system_message else []  # Qwen: the template's default
    text = local.render_chat([*system, {"role": "user", "content": content}])
    pixels, grids = [], []
    for f in frames:
        pix = preprocess_qwen25vl(
            torch.as_tensor(f)[None], min_pixels=28 * 28, max_pixels=448 * 448
        )
        pixels.append(pix["pixel_values_videos"])
        grids.append(pix["video_grid_thw"])
        n = int(pix["video_grid_thw"].prod()) // 4
        text = text.replace("<|image_pad|>", "<|IMAGE|>" * n, 1)
    ids = torch.tensor(
        [
            local.tokenizer(text.replace("<|IMAGE|>", "<|image_pad|>"), add_special_tokens=False)[
                "input_ids"
            ]
        ]
    )
    types = (ids == local.tokenizer.convert_tokens_to_ids("<|image_pad|>")).to(torch.int32)
    with torch.no_grad():
        local.model.model.rope_deltas = None
        pix = (
            {"pixel_values": torch.cat(pixels), "image_grid_thw": torch.cat(grids)} if grids else {}
        )
        out = local.model(
            input_ids=ids, mm_token_type_ids=types, use_cache=False, logits_to_keep=1, **pix
        )
    lp = torch.log_softmax(out.logits[0, -1].double(), -1)
    return np.array([lp[local.tokenizer.convert_tokens_to_ids(a)].item() for a in answers]), ids


def test_images_served_against_local_on_the_same_weights(llama, key, twin):
    """The same weights (the GGUF's twin: 3 vision layers) and the same frames, at a size that
    is the processor's own (multiples of 28: nothing is resized on either side), each frame an
    image on both sides; the options (A-C) and the digits (0-9) of a progress question.
    Pinned: the same prompt length (image tokens included) and, without images, the same
    logprobs within 0.01. With images the logprobs differ by more than the 0.02 goal (printed
    with -s: options 0.023 and digits 0.030 for one grey 112x112 image, 0.045 and 0.135 for
    four 84x112 ones): the gap lies in llama.cpp's image path (mtmd) against transformers', whose
    cause is not found (README, served section); :data:`IMAGE_TOL` bounds it. The
    2-vision-layer model that shared the GGUF's model id before fingerprints has other weights
    altogether (differences above 1 even without images)."""
    local = twin
    scorer = served(llama.url, strategy="labels", concurrency=1, cache_prompt=False, pixels=None)
    options = get_prompt("vsg").format(goal=GOAL, choices=format_choices(STEPS, ["A", "B", "C"]))
    questions, _, _ = build_questions(
        GOAL, STEPS, ["A", "B", "C"], prompt="vsg", vsg_prompt="multiple_choice", progress=True,
        next_step=False,
    )  # fmt: skip
    assert questions[0].text == options
    asked = {"options": questions[0], "digits": questions[1]}  # A-C; 0-9 of step 1
    rng = np.random.default_rng(3)
    cases = {
        "text": (np.zeros((0, 3, 84, 112), np.uint8), 0.01),
        "grey": (np.full((1, 3, 112, 112), 128, np.uint8), IMAGE_TOL),
        "four": (rng.integers(0, 256, (4, 3, 84, 112), dtype=np.uint8), IMAGE_TOL),
    }
    for name, (frames, tol) in cases.items():
        images = scorer._encode(frames[None])[0]
        for kind, q in asked.items():
            lp_local, ids = local_image_logprobs(local, scorer, q.text, frames, q.answers)
            lp_served = np.log(scorer.question_probs(q, images))
            usage = scorer._post(scorer.messages(q.text, images))["usage"]
            assert usage["prompt_tokens"] == ids.shape[1], name  # the same tokens, images too
            # the README's figures: `pytest tests/test_served.py -k images -s` prints them
            gap = np.abs(lp_served - lp_local).max()
            print(f"{name} {kind}: max |served - local| log-prob {gap:.4f}")
            np.testing.assert_allclose(lp_served, lp_local, atol=tol, err_msg=f"{name} {kind}")


def score_served(videos: Path, ann: Path, root: Path, url: str, model: str = MODEL) -> tuple:
    """``score --backend openai`` in process: (exit status, summary or None, error lines)."""
    import contextlib
    import io

    argv = ["score", "--dataset", "coin", "--video-dir", str(videos), "--annotations", str(ann),
            "--cache-root", str(root), "--backend", "openai", "--model", model, "--family",
            "qwen2_5_vl", "--base-url", url, "--api-key-env", KEY_ENV, "--no-progress"]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    errors = [line for line in err.getvalue().splitlines() if line.startswith("error:")]
    return rc, json.loads(out.getvalue()) if rc == 0 else None, errors


@pytest.mark.parametrize("swap", ["same-path", "same-alias"])
def test_other_weights_behind_the_same_description_are_refused(llama, key, tmp_path, swap):
    """Two tiny GGUFs of the same shapes (seed 0, seed 1), served one after the other with the
    same /v1/models description: the file replaced at the same path, or two files under one
    --alias. The second run does not report the first model's scores as cached: its canary
    differs, and it refuses with one line naming both.

    Same path: the first server is the module's (seed 0 at its own path); seed 1 is then saved
    over that path and served by a second server, and seed 0 is put back after (each server
    start loads llama.cpp's 151,665-token vocabulary: seconds of CPU)."""
    first, mmproj = random_gguf("qwen2_5_vl")
    second, _ = random_gguf("qwen2_5_vl", seed=1)
    videos = short_clips(tmp_path / "videos", ["v1"], 2.2, size="112:84")
    ann = coin_annotations(tmp_path / "ann", ["v1"], STEPS[:1], 2.2)
    root = tmp_path / "cache"
    alias = "tiny-qwen" if swap == "same-alias" else None
    descriptions, results = [], []
    try:
        for n, weights in enumerate((first, second)):
            if swap == "same-path" and n == 0:
                url, proc = llama.url, None  # the module's server, serving seed 0 at llama.model
            else:
                if swap == "same-path":
                    place(weights, llama.model)
                model = llama.model if swap == "same-path" else weights
                proc = ServerProcess(
                    model, tmp_path / f"server{n}.log", api_key=KEY, mmproj=mmproj, n_ctx=2048,
                    threads=1, alias=alias,
                ).wait_ready()  # fmt: skip
                url = proc.url
            try:
                descriptions.append(served(url)._fetch_metadata())
                results.append(score_served(videos, ann, root, url, alias or MODEL))
            finally:
                if proc is not None:
                    proc.kill()
    finally:
        if swap == "same-path":
            place(llama.weights, llama.model)  # seed 0 again, for a restart of the module's server
    assert descriptions[0] == descriptions[1]  # /v1/models cannot tell the two apart
    (rc, summary, errors), (rc2, summary2, errors2) = results
    assert rc == 0 and summary["scored"] == 1, errors
    assert rc2 == 1 and summary2 is None and len(errors2) == 1
    assert f"the served model is not the one whose scores are in {summary['cache']}" in errors2[0]
    assert "canary answers differ by" in errors2[0] and "then," in errors2[0]
    assert ScoreCache.open(summary["cache"]).uids() == ["v1"]
