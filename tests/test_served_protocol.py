"""The served scorer's protocol against a stub OpenAI-compatible server on 127.0.0.1.

The stub answers with chosen logprobs, so the label mapping, the strategies, the probing and the
refusals are checked exactly; ``tests/test_served.py`` runs the same scorer against llama.cpp's
real server. No model is involved: the stub's numbers are test inputs, never presented as scores.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import torch
from clips import coin_annotations, short_clips
from PIL import Image

from baglm_nb.models.families.qwen2_5_vl import smart_resize
from baglm_nb.models.openai_client import ConnectionOptions, ServerError
from baglm_nb.models.preprocess import resize_uint8
from baglm_nb.models.questions import ScoringError
from baglm_nb.models.scoring import make_scorer, score_dataset
from baglm_nb.models.served import ServedScorer, answer_probs, user_content
from baglm_nb.models.served_checks import (
    PROBE_QUESTION,
    canary_refusal,
    listed_refusal,
    lows_refusal,
)
from baglm_nb.stores.scores import ScoreCache

KEY_ENV = "BAGLM_TEST_STUB_KEY"
GOAL = "make tea"
STEPS = ["Boil the water.", "Pour the water."]
#: The stub's logprobs: the VSG options A, B and C (none), the digits, and other tokens.
VSG = {"A": math.log(0.1), "B": math.log(0.3), "C": math.log(0.05)}
DIGITS = {str(d): math.log(0.01 * (d + 1)) for d in range(10)}


#: The stub's answer to the probe's and the canary's question.
PROBE = {**VSG, **{d: lp + math.log(0.1) for d, lp in DIGITS.items()}}
#: Two letters the probe forces as low-ranked tokens (with the digits it does not list).
LOW = {"Z": -9.0, "Q": -9.5}
#: The stub's vocabulary: token -> id ("Hello" is its most likely token after B).
IDS = {
    "Hello": 5,
    **{t: 10 + i for i, t in enumerate(VSG)},
    **{d: 20 + int(d) for d in DIGITS},
    **{t: 40 + i for i, t in enumerate(LOW)},
}
RAW = {**VSG, **DIGITS, **LOW, "Hello": -2.0}


def entry(token: str, logprob) -> dict:
    return {
        "id": IDS.get(token, 0),
        "token": token,
        "bytes": list(token.encode()),
        "logprob": logprob,
    }


def chat_answer(top: list[dict]) -> dict:
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "x"},
                "logprobs": {"content": [{**top[0], "top_logprobs": top}]},
            }
        ]
    }


class Stub:
    """A tiny OpenAI-compatible server: ``handler(path, body) -> (status, json)``."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.gets: list[str] = []
        self.handler = self.full_vocab
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):  # noqa: N802
                stub.gets.append(self.path)
                self._reply(*stub.handler(self.path, None))

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                self._reply(*stub.handler(self.path, body))

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @staticmethod
    def question(body: dict) -> str:
        content = body["messages"][-1]["content"]
        if body["messages"][-1]["role"] == "assistant":
            content = body["messages"][-2]["content"]
        return content if isinstance(content, str) else content[-1]["text"]

    def full_vocab(self, path: str, body: dict | None, drop=()):
        """llama.cpp-like: the vocabulary size in /v1/models, as many logprobs as asked."""
        if body is None:
            return 200, {"data": [{"id": "m", "meta": {"n_vocab": 1234}}]}
        if "Rate how far" in self.question(body):
            top = [entry(d, lp) for d, lp in DIGITS.items()]
        elif self.question(body) == PROBE_QUESTION:  # the probe and the canary: letters, digits
            top = [entry(t, lp) for t, lp in PROBE.items()]
        else:
            top = [entry(a, lp) for a, lp in VSG.items()]
        top = [e for e in top if e["token"] not in drop] + [entry("Hello", -2.0)]
        n = body.get("top_logprobs") or 0
        if n > 20:  # the rest of a "vocabulary"
            top += [entry(f"tok{i}", -20.0) for i in range(min(n, 100) - len(top))]
        return 200, chat_answer(top[:n])


@pytest.fixture(scope="module")
def stub():
    s = Stub()
    yield s
    s.httpd.shutdown()


@pytest.fixture
def server(stub, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-stub-key")
    stub.requests.clear()
    stub.gets.clear()
    stub.handler = stub.full_vocab
    return stub


def scorer(server: Stub, **kw) -> ServedScorer:
    kw.setdefault("strategy", "full-vocab")
    kw.setdefault("family", "qwen2_5_vl")
    conn = ConnectionOptions(server.url, KEY_ENV, timeout=10, max_attempts=2, backoff=0.01)
    return ServedScorer("m", connection=conn, **kw)


def scoring_requests(server: Stub) -> list[dict]:
    """The chat requests that score segments (not the probe's nor the canary's)."""
    return [b for b in server.requests if "messages" in b and Stub.question(b) != PROBE_QUESTION]


def frames(s: int = 2, f: int = 4) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (s, f, 3, 24, 32), dtype=np.uint8)


def decode(url: str) -> np.ndarray:
    head, data = url.split(",", 1)
    assert head == "data:image/png;base64"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data)))).transpose(2, 0, 1)


def test_label_mapping_none_last_shapes_and_raw_probabilities(server):
    sc = scorer(server, concurrency=3)
    assert sc.strategy == "full-vocab" and len(server.requests) == 2  # the probe: text, image
    server.requests.clear()
    x = frames()
    r = sc.score_segments(x, GOAL, STEPS)
    assert r.labels == ("A", "B", "C") and r.model_id == "openai:m, full-vocab"
    assert r.vsg.shape == (2, 3) and r.progress.shape == (2, 2, 10) and r.next_step is None
    np.testing.assert_allclose(r.vsg, [[0.1, 0.3, 0.05]] * 2, rtol=1e-12)  # none (C) last
    np.testing.assert_allclose(r.progress[1, 0], 0.01 * np.arange(1, 11), rtol=1e-12)
    assert not r.renormalised and r.label == "served" and r.family == "qwen2_5_vl"
    assert r.prompt_versions == {"vsg": "vsg-v1", "prog": "prog-v1"}
    # the requests: one per (segment, question), first token only, full vocabulary
    assert len(server.requests) == 2 * 3
    body = server.requests[0]
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 1234
    assert body["model"] == "m" and [m["role"] for m in body["messages"]] == ["user"]
    # Qwen2.5-VL: the segment's frames as images in order, then the question
    seen = {}
    for b in server.requests:
        parts = b["messages"][0]["content"]
        assert [p["type"] for p in parts] == ["image_url"] * 4 + ["text"]
        seen[parts[-1]["text"][:30], decode(parts[0]["image_url"]["url"]).tobytes()] = parts
    # at Qwen2.5-VL's processor size: 24x32 is below its 128*28*28 minimum, so 280x392
    sent = torch.from_numpy(x.reshape(-1, 3, 24, 32))
    sent = resize_uint8(sent, (280, 392)).numpy().reshape(2, 4, 3, 280, 392)
    assert smart_resize(24, 32, 28, 128 * 28 * 28, 360 * 420) == (280, 392)
    for s in range(2):
        parts = next(p for (_, im), p in seen.items() if im == sent[s, 0].tobytes())
        for i in range(4):
            np.testing.assert_array_equal(decode(parts[i]["image_url"]["url"]), sent[s, i])
    # pixels=None: the decoded frames as they are
    server.requests.clear()
    scorer(server, pixels=None).score_segments(x[:1], GOAL, STEPS[:1], progress=False)
    url = scoring_requests(server)[0]["messages"][0]["content"][2]["image_url"]["url"]
    np.testing.assert_array_equal(decode(url), x[0, 2])


def test_renormalised_flag(server):
    r = scorer(server).score_segments(frames(1), GOAL, STEPS, renormalise=True)
    assert r.renormalised
    np.testing.assert_allclose(r.vsg[0], np.array([0.1, 0.3, 0.05]) / 0.45, rtol=1e-12)
    np.testing.assert_allclose(r.progress.sum(-1), 1.0, rtol=1e-12)


def test_family_layouts_and_system_messages():
    qwen = user_content("qwen2_5_vl", "Q?", ["u1", "u2"])
    assert [p.get("text") for p in qwen] == [None, None, "Q?"]
    internvl = user_content("internvl", "Q?", ["u1", "u2"])
    assert [p.get("text") or p["image_url"]["url"] for p in internvl] == [
        "Frame1: ",
        "u1",
        "\nFrame2: ",
        "u2",
        "\nQ?",
    ]
    llava = user_content("llava_onevision", "Q?", ["u1"])
    assert llava[-1]["text"] == "\nQ?"
    assert user_content("internvl", "Q?", []) == "Q?"
    sc = ServedScorer("OpenGVLab/InternVL3-8B-hf", client=object())
    assert sc.family == "internvl" and sc.messages("Q?")[0]["role"] == "system"
    with pytest.raises(ValueError, match="pass --family"):
        ServedScorer("my-model", client=object())


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (float("nan"), r"answer 'B'.*invalid log-probability nan"),
        (0.5, r"answer 'B'.*invalid log-probability 0\.5"),
        (float("inf"), "invalid log-probability inf"),
        (None, "None is not a number"),
        ("BAD", "'BAD' is not a number"),
        (True, "True is not a number"),
    ],
)
def test_bad_logprob_is_an_error_never_p1(value, match):
    top = [entry("A", math.log(0.2)), entry("B", value), entry("C", -3.0)]
    with pytest.raises(ScoringError, match=match):
        answer_probs(chat_answer(top), ["A", "B", "C"])


def test_malformed_and_ambiguous_responses():
    with pytest.raises(ScoringError, match="no choices"):
        answer_probs({"choices": [{"message": {}}]}, ["A"])
    twice = [entry("A", -1.0), entry("A", -2.0)]
    with pytest.raises(ScoringError, match="two entries"):
        answer_probs(chat_answer(twice), ["A"])
    # matched by bytes: a token string that is not valid UTF-8 on its own cannot fake "A"
    odd = [{"token": "A", "bytes": [0xE4, 0xBD], "logprob": -0.1}, entry("A", -2.0)]
    assert answer_probs(chat_answer(odd), ["A"])[0] == pytest.approx(math.exp(-2.0))


def test_missing_label_fails_the_video_naming_segment_and_label(server, tmp_path):
    videos = short_clips(tmp_path / "videos", ["v1", "v2"], 4.2)
    ann = coin_annotations(tmp_path / "ann", ["v1", "v2"], STEPS, 4.2)
    calls = {"n": 0}

    def drop_c_in_second_segment_of_v2(path, body):
        question = None if body is None else server.question(body)
        if question is not None and "Rate how far" not in question and question != PROBE_QUESTION:
            calls["n"] += 1
            if calls["n"] == 4:  # v1: 2 segments; v2: the second segment's VSG question
                return server.full_vocab(path, body, drop=("C",))
        return server.full_vocab(path, body)

    server.handler = drop_c_in_second_segment_of_v2
    summary = score_dataset(
        "coin",
        videos,
        scorer(server),
        root=tmp_path / "cache",
        annotations=ann,
        show_progress=False,
    )
    assert summary["scored"] == ["v1"] and list(summary["failed"]) == ["v2"]
    msg = summary["failed"]["v2"]
    assert "video 'v2', segment 1 (2-4 s)" in msg and "the VSG question" in msg
    assert "answer 'C'" in msg and "never read as 0" in msg
    cache = ScoreCache.open(summary["cache"])
    assert cache.uids() == ["v1"] and cache.key.model == "openai:m, full-vocab"
    failures = json.loads((cache.path / "failures.json").read_text())
    assert failures["v2"] == msg


def test_approx_refused_beyond_20_answers_and_its_fill_rule(server):
    with pytest.raises(ValueError, match="--allow-approx"):
        scorer(server, strategy="approx-top20")
    sc = scorer(server, strategy="approx-top20", allow_approx=True)
    assert sc.strategy == "approx-top20"
    server.requests.clear()
    many = [f"step {i}" for i in range(20)]  # K+1 = 21 > 20
    with pytest.raises(ScoringError, match="21 answers .* refused"):
        sc.score_segments(frames(1), GOAL, many)
    assert server.requests == []  # refused before asking anything
    server.handler = lambda p, b: server.full_vocab(p, b, drop=("C",))
    r = sc.score_segments(frames(1), GOAL, STEPS, progress=False)
    listed = [0.1, 0.3, math.exp(-2.0)]
    fill = min(min(listed), 1 - sum(listed))  # one missing answer: the leftover, capped
    np.testing.assert_allclose(r.vsg[0], [0.1, 0.3, fill], rtol=1e-12)
    assert scoring_requests(server)[0]["top_logprobs"] == 20
    assert r.model_id == "openai:m, approx-top20"


def vllm_like(stub: Stub, *, prompt_logprobs: bool):
    """A server capped at 20 top logprobs; with ``prompt_logprobs``, vLLM's extension."""

    def handle(path, body):
        if body is None:
            return 200, {"data": [{"id": "m"}]}
        if (body.get("top_logprobs") or 0) > 20:
            return 400, {"error": {"message": "top_logprobs must be <= 20", "code": 400}}
        if "prompt_logprobs" in body:
            if not prompt_logprobs:
                return 400, {"error": {"message": "unknown field prompt_logprobs"}}
            answer = body["messages"][-1]["content"]
            lp = {**VSG, **DIGITS}.get(answer, -1.0)
            last = {"17": {"logprob": lp, "rank": 5, "decoded_token": answer}}
            return 200, {
                "choices": [{"message": {"content": "x"}}],
                "prompt_logprobs": [None, {"3": {"logprob": -1.0}}, last],
            }
        return stub.full_vocab(path, body)

    return handle


def test_auto_probe_picks_the_best_strategy(server):
    sc = scorer(server, strategy="auto")
    assert sc.model_id == "openai:m, full-vocab"  # 21 top logprobs accepted
    # first the unbiased top 20 of the text and the image prompt, then the labels probe (the
    # runner-up "Hello" forced: the stub ignores logit_bias)
    assert [b["top_logprobs"] for b in server.requests] == [20, 20, 1, 21]
    assert server.requests[2]["logit_bias"] == {"5": 100}
    assert sc.strategy_reason.startswith(
        "labels refused: the server generated 'A' instead of "
        "the forced answer 'Hello': it ignores logit_bias"
    )

    server.handler = vllm_like(server, prompt_logprobs=True)
    sc = scorer(server, strategy="auto")
    assert sc.strategy == "prompt-logprobs"
    server.requests.clear()
    r = sc.score_segments(frames(1), GOAL, STEPS[:1])
    np.testing.assert_allclose(r.vsg[0], [0.1, 0.3], rtol=1e-12)
    np.testing.assert_allclose(r.progress[0, 0], 0.01 * np.arange(1, 11), rtol=1e-12)
    assert len(server.requests) == 2 + 10  # one request per answer
    body = server.requests[0]
    assert body["messages"][-1] == {"role": "assistant", "content": "A"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["prompt_logprobs"] == 0 and body["max_tokens"] == 1

    server.handler = vllm_like(server, prompt_logprobs=False)
    with pytest.raises(ServerError, match="at most 20 top logprobs .* --allow-approx"):
        _ = scorer(server, strategy="auto").strategy
    assert scorer(server, strategy="auto", allow_approx=True).strategy == "approx-top20"


def test_prefill_merged_with_the_template_is_an_error(server):
    def merged(path, body):
        return 200, {"prompt_logprobs": [None, {"9": {"logprob": -2.0, "decoded_token": "\nA"}}]}

    server.handler = merged
    sc = scorer(server, strategy="prompt-logprobs")
    with pytest.raises(ScoringError, match="not the prefilled answer 'A' alone"):
        sc.score_segments(frames(1), GOAL, STEPS[:1], progress=False)


def test_transient_errors_are_retried_and_a_dead_server_stops_the_run(server):
    state = {"n": 0}

    def flaky(path, body):
        state["n"] += 1
        if state["n"] == 1:
            return 503, {"error": {"message": "loading model"}}
        return server.full_vocab(path, body)

    server.handler = flaky
    r = scorer(server).score_segments(frames(1), GOAL, STEPS[:1], progress=False)
    np.testing.assert_allclose(r.vsg[0], [0.1, 0.3], rtol=1e-12)
    dead = ServedScorer(
        "m",
        family="qwen2_5_vl",
        connection=ConnectionOptions(
            "http://127.0.0.1:9/v1", KEY_ENV, timeout=5, max_attempts=2, backoff=0.01
        ),
        strategy="full-vocab",
        top_logprobs=10,
    )
    with pytest.raises(ServerError, match=r"cannot connect .*\(gave up after 2 attempts\)"):
        dead.score_segments(frames(1), GOAL, STEPS[:1])


def test_wrong_key_is_not_retried_and_never_shown(server, monkeypatch):
    wrong = "sk-WRONG-stub-4f1e"
    monkeypatch.setenv(KEY_ENV, wrong)
    server.handler = lambda p, b: (401, {"error": {"message": f"invalid key {wrong}"}})
    sc = scorer(server, strategy="auto")
    with pytest.raises(ServerError) as info:
        _ = sc.strategy
    msg = str(info.value)
    assert "rejected the API key from $" + KEY_ENV in msg and wrong not in msg
    assert server.gets == ["/v1/models"] and not server.requests  # not retried
    assert wrong not in repr(sc)


def test_make_scorer_openai_prefix(server):
    sc = make_scorer(
        "openai:Qwen/Qwen2.5-VL-7B-Instruct",
        connection=ConnectionOptions(server.url, KEY_ENV),
        strategy="full-vocab",
    )
    assert isinstance(sc, ServedScorer) and sc.family == "qwen2_5_vl"
    assert sc.model_id == "openai:Qwen/Qwen2.5-VL-7B-Instruct, full-vocab"


def test_follow_scores_through_a_served_model(server, tmp_path, capsys):
    from baglm_nb.apps.cli.main import main

    videos = short_clips(tmp_path / "videos", ["v1"], 4.2)
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"goal": GOAL, "steps": STEPS}))
    jsonl = tmp_path / "events.jsonl"
    code = main(
        [
            "follow",
            str(videos / "v1.mp4"),
            "--task",
            str(task),
            "--model",
            "openai:m",
            "--base-url",
            server.url,
            "--api-key-env",
            KEY_ENV,
            "--family",
            "qwen2_5_vl",
            "--strategy",
            "full-vocab",
            "--request-timeout",
            "10",
            "--jsonl",
            str(jsonl),
        ]
    )
    assert code == 0, capsys.readouterr().err
    events = [json.loads(line) for line in jsonl.read_text().splitlines()]
    segments = [e for e in events if e.get("event", "segment") == "segment"]
    assert len(segments) == 2  # 4.2 s: two whole 2-s segments
    asked = scoring_requests(server)
    assert len(asked) == 2 * (1 + len(STEPS))  # per segment: VSG + K progress questions
    assert all(b["model"] == "m" for b in asked)


def labels_server(stub: Stub, mode: str = "raw", models: dict | None = None):
    """A llama.cpp-like server that honours logit_bias: the forced token's raw logprob
    (``mode="raw"``), its post-sampling one (``"post"``: 0.0), or ``/tokenize`` saying that
    each label is two tokens (``"split"``); ``models`` is what ``/v1/models`` answers."""
    names = {i: t for t, i in IDS.items()}

    def handle(path, body):
        if body is None:
            return 200, models or {
                "data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_vocab": 1234, "size": 1}}]
            }
        if path == "/tokenize":
            ids = [IDS[body["content"]]] * (2 if mode == "split" else 1)
            return 200, {"tokens": ids}
        if "logit_bias" in body:
            ((tid, bias),) = body["logit_bias"].items()
            assert bias == 100 and body["top_logprobs"] == 1
            token = names[int(tid)]
            return 200, chat_answer([entry(token, 0.0 if mode == "post" else RAW[token])])
        return stub.full_vocab(path, body)

    return handle


def test_labels_reads_each_forced_answer_raw(server):
    server.handler = labels_server(server)
    sc = scorer(server, strategy="auto")
    assert sc.strategy == "labels" and "exact" in sc.strategy_reason
    server.requests.clear()
    r = sc.score_segments(frames(1), GOAL, STEPS)
    assert r.model_id == "openai:m, labels"
    np.testing.assert_allclose(r.vsg[0], [0.1, 0.3, 0.05], rtol=1e-12)  # raw, not renormalised
    np.testing.assert_allclose(r.progress[0, 1], 0.01 * np.arange(1, 11), rtol=1e-12)
    chats = scoring_requests(server)
    assert len(chats) == 3 + 2 * 10  # one request per answer
    assert sorted(int(next(iter(b["logit_bias"]))) for b in chats[:3]) == [10, 11, 12]
    assert all(b["cache_prompt"] is True for b in chats)  # llama.cpp: one prefill per question
    assert len([b for b in server.requests if "content" in b and "messages" not in b]) == 13


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        (
            "post",
            r"reported logprob 0 for the forced token 'Hello' \(the biased, post-sampling "
            r"distribution\), whose raw logprob is -2",
        ),
        ("ignore", r"generated 'A' instead of the forced answer 'Hello': it ignores logit_bias"),
    ],
)
def test_labels_refused_by_the_probe_and_nothing_cached(server, tmp_path, mode, why):
    server.handler = labels_server(server, mode) if mode != "ignore" else server.full_vocab
    auto = scorer(server, strategy="auto")
    assert auto.strategy == "full-vocab" and re.search(why, auto.strategy_reason)
    videos = short_clips(tmp_path / "videos", ["v1"], 2.2)
    ann = coin_annotations(tmp_path / "ann", ["v1"], STEPS, 2.2)
    with pytest.raises(ServerError, match="cannot use --strategy labels: .*" + why):
        score_dataset(
            "coin",
            videos,
            scorer(server, strategy="labels"),
            root=tmp_path / "cache",
            annotations=ann,
            show_progress=False,
        )
    assert not (tmp_path / "cache").exists()


def test_labels_multi_token_answer_refused_with_its_ids(server, tmp_path):
    server.handler = labels_server(server, "split")
    sc = scorer(server, strategy="labels", top_logprobs=None)
    sc.strategy_reason = "checked"  # the probe reads the runner-up's id from the response
    with pytest.raises(
        ScoringError, match=r"answer label 'A' is 2 tokens \[10, 10\] on the server"
    ):
        sc.score_segments(frames(1), GOAL, STEPS)


def test_server_that_changes_model_mid_run_stops_it(server, tmp_path, capsys):
    from baglm_nb.apps.cli.main import main

    uids = ["v1", "v2"]
    videos = short_clips(tmp_path / "videos", uids, 2.2)
    ann = coin_annotations(tmp_path / "ann", uids, STEPS, 2.2)
    models = {"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"size": 1}}]}
    handle = labels_server(server, models=models)
    seen = {"chats": 0}

    def swap_during_v2(path, body):
        if body is not None and "messages" in body and server.question(body) != PROBE_QUESTION:
            seen["chats"] += 1
            if seen["chats"] == 23 + 1:  # video 1, then video 2's first request
                models["data"][0]["meta"] = {"size": 2}  # another model behind the same name
        return handle(path, body)

    server.handler = swap_during_v2
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
            "openai:m",
            "--family",
            "qwen2_5_vl",
            "--base-url",
            server.url,
            "--api-key-env",
            KEY_ENV,
            "--concurrency",
            "1",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "changed model during the run" in lines[0]
    assert '{"size": 1}' in lines[0] and '{"size": 2}' in lines[0] and "resume" in lines[0]
    (folder,) = (tmp_path / "cache").glob("scores/coin/*/*/*")
    cache = ScoreCache.open(folder)
    assert cache.uids() == ["v1"] and cache.key.model == "openai:m, labels"
    assert folder.parent.parent.name == f"openai_m__labels@{cache.key.weights}"


# --------------------------------------------------------------------------------------------
# servers whose logprobs lie, and the canary


#: A small vocabulary with a fixed log-softmax: letters, digits, a few words.
VOCAB = [*"ABCDEFGHIJKLMNOPQRSTUVWXYZ", *"0123456789", "Hello", "the", "tea"]


def log_softmax(shift: float = 0.0) -> dict[str, float]:
    """A fixed distribution over :data:`VOCAB` (``shift`` moves the logits: other weights)."""
    logits = np.array([math.sin(1.7 * i + shift) * 3 for i in range(len(VOCAB))])
    lp = logits - np.log(np.exp(logits).sum())
    return dict(zip(VOCAB, lp.tolist(), strict=True))


def has_image(body: dict) -> bool:
    content = body["messages"][-1]["content"]
    return isinstance(content, list) and any(p.get("type") == "image_url" for p in content)


def model_server(
    shift: float = 0.0, *, top_exact: int | None = None, listed: int = 10**6, image_lp=None
):
    """A llama.cpp-like server of :func:`log_softmax`: ``logit_bias`` forces a token and its
    raw logprob comes back. The lies: only the ``top_exact`` best tokens exact, -9999 for
    every other (and at most ``listed`` entries listed); ``image_lp``: every logprob of an
    image prompt, listed or forced."""
    ids = {t: 100 + i for i, t in enumerate(VOCAB)}
    names = {i: t for t, i in ids.items()}
    lp = log_softmax(shift)
    ranked = sorted(VOCAB, key=lambda t: -lp[t])

    def value(token: str, body: dict) -> float:
        if image_lp is not None and has_image(body):
            return image_lp
        if top_exact is not None and ranked.index(token) >= top_exact:
            return -9999.0
        return lp[token]

    def handle(path, body):
        if body is None:
            return 200, {"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"size": 7}}]}
        if path == "/tokenize":
            return 200, {"tokens": [ids[body["content"]]]}
        if "logit_bias" in body:
            ((tid, _),) = body["logit_bias"].items()
            token = names[int(tid)]
            return 200, chat_answer([{**entry(token, value(token, body)), "id": int(tid)}])
        n = min(body.get("top_logprobs") or 1, listed)
        top = [{**entry(t, value(t, body)), "id": ids[t]} for t in ranked[:n]]
        return 200, chat_answer(top)

    return handle


def score_cli(server: Stub, tmp_path, *extra: str) -> tuple[int, str, str]:
    from baglm_nb.apps.cli.main import main

    videos, ann = tmp_path / "videos", tmp_path / "ann"
    if not videos.exists():
        short_clips(videos, ["v1"], 2.2)
        coin_annotations(ann, ["v1"], STEPS, 2.2)
    argv = ["score", "--dataset", "coin", "--video-dir", str(videos), "--annotations", str(ann),
            "--cache-root", str(tmp_path / "cache"), "--model", "openai:m", "--family",
            "qwen2_5_vl", "--base-url", server.url, "--api-key-env", KEY_ENV,
            "--request-attempts", "1", "--no-progress", *extra]  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_an_honest_server_passes_the_probe(server, tmp_path):
    server.handler = model_server()
    rc, out, err = score_cli(server, tmp_path)
    assert rc == 0, err
    assert "strategy labels (the probe found forced answers' logprobs exact)" in err
    cache = ScoreCache.open(json.loads(out)["cache"])
    lp = log_softmax()
    np.testing.assert_allclose(cache.read_video("v1").vsg[0], [math.exp(lp[a]) for a in "ABC"])


@pytest.mark.parametrize(
    ("lie", "why"),
    [
        ({"top_exact": 5}, r"on the text prompt it listed 15 logprob\(s\) below -1000"),
        (
            {"top_exact": 5, "listed": 5},
            r"on the text prompt it reported .*-9999.* for low-ranked forced token\(s\): a floor",
        ),
        (
            {"image_lp": math.log(0.5)},
            r"on the image prompt its top 20 probabilities sum to 10 > 1",
        ),
    ],
    ids=["top5-floor-listed", "top5-floor-forced", "wrong-on-images"],
)
@pytest.mark.parametrize("strategy", ["auto", "labels"])
def test_a_server_with_false_logprobs_is_refused_and_nothing_written(
    server, tmp_path, lie, why, strategy
):
    """A server exact only for its top 5 tokens (-9999 for every other one, listed or not), and
    one exact on text prompts but not on image prompts: one error line, exit 1, no cache."""
    server.handler = model_server(**lie)
    rc, out, err = score_cli(server, tmp_path, "--strategy", strategy)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert re.search("fails the logprob probe: " + why, lines[0]), lines[0]
    assert "nothing is scored" in lines[0] and "resume" not in lines[0]
    assert out == "" and not (tmp_path / "cache").exists()


def test_probe_checks_closed_form():
    ok = [("A", math.log(0.5)), ("B", math.log(0.3))]
    assert listed_refusal(ok, "p") is None
    assert "sum to 1.1 > 1" in listed_refusal([*ok, ("C", math.log(0.3))], "p")
    assert "below -1000" in listed_refusal([*ok, ("C", -9999.0)], "p")
    lows = [("9", -7.0), ("7", -7.5), ("Z", -8.0), ("Q", -9.0)]
    assert lows_refusal(lows, ok, True, "p") is None
    assert "one constant logprob -7" in lows_refusal([(t, -7.0) for t, _ in lows], ok, True, "p")
    assert lows_refusal([(t, -7.0) for t, _ in lows[:3]], ok, True, "p") is None  # too few
    assert "floor" in lows_refusal([*lows[:3], ("Q", -2000.0)], ok, True, "p")
    above = lows_refusal([("9", -1.0)], ok, True, "p")
    assert "outside its top 2, whose last logprob is -1.204" in above
    few = [("A", math.log(0.3)), ("B", math.log(0.2))]
    assert lows_refusal([("9", -1.0)], few, False, "p") is None  # a shorter list than asked
    assert "sum to 1.17" in lows_refusal([("9", math.log(0.37))], ok, False, "p")


def canary(text, image, **kw):
    return {"question": "q", "answers": ["A", "B"], "strategy": "labels",
            "logprobs": {"text": text, "image": image}, **kw}  # fmt: skip


def test_canary_refusal_closed_form():
    a = canary([-1.0, -2.0], [-1.5, -2.5])
    assert canary_refusal(a, canary([-1.05, -2.0], [-1.5, -2.45])) is None  # within 0.1
    why = canary_refusal(a, canary([-1.0, -2.0], [-1.5, -2.8]))
    assert "differ by 0.3 in log-probability (more than 0.1)" in why
    assert "image [-1.500, -2.500] then, [-1.500, -2.800] now" in why
    assert canary_refusal(a, canary([-1.0, -2.0], [-1.5, -2.8]), tol=0.5) is None
    assert canary_refusal(a, {**a, "strategy": "full-vocab"}) == ""  # not comparable


def test_another_model_under_the_same_name_is_refused_on_resume(server, tmp_path):
    """The same name and /v1/models description, other weights (another GGUF at the same
    path): the stored canary differs, so the resumed run refuses (one line naming both
    canaries) and nothing is written; the same model resumes; a cache from before canaries
    is resumed with one warning and its canary recorded."""
    server.handler = model_server()
    rc, out, err = score_cli(server, tmp_path)
    assert rc == 0, err
    folder = Path(json.loads(out)["cache"])
    stored = json.loads((folder / "weights.json").read_text())
    assert stored["served"]["meta"] == {"size": 7} and stored["canary"]["strategy"] == "labels"
    assert stored["canary"]["answers"] == ["A", "B", "0", "9"]
    assert set(stored["canary"]["logprobs"]) == {"text", "image"}
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}

    server.handler = model_server(shift=0.5)  # other weights, the same description
    rc, out, err = score_cli(server, tmp_path)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 1 and len(lines) == 1 and out == "", err
    assert f"the served model is not the one whose scores are in {folder}" in lines[0]
    assert "then," in lines[0] and "now" in lines[0] and "resume" in lines[0]
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before  # nothing written

    server.handler = model_server()
    rc, out, err = score_cli(server, tmp_path)
    assert rc == 0 and json.loads(out)["already_cached"] == 1, err

    (folder / "weights.json").unlink()  # a cache from before canaries
    server.handler = model_server(shift=0.5)
    with pytest.warns(UserWarning, match="scores cached without a canary comparable to this run"):
        rc, out, err = score_cli(server, tmp_path)
    assert rc == 0 and json.loads(out)["already_cached"] == 1, err
    assert json.loads((folder / "weights.json").read_text())["canary"] != stored["canary"]
