"""Prompt texts, versions, option labels and the offline Qwen tokenizer."""

from __future__ import annotations

import pytest

from baglm_nb.models.prompts import (
    DIGITS,
    NONE_OPTION,
    PROMPTS,
    Prompt,
    check_single_tokens,
    excel_label,
    format_choices,
    get_prompt,
    option_labels,
    prompt_table,
)

# --------------------------------------------------------------------------------------------
# texts (reference-protocol §2.1, §3.1, §4.1; paper appendix)

VSG_EXPECTED = """You are watching a video segment of someone attempting to {goal}.
What is the main action being performed in this exact moment?

Options:
{choices}

Answer with only the letter label of the correct option (e.g., A, B, ..., Z, AA, AB, etc.), with no extra text.
"""  # noqa: E501

PROG_EXPECTED = """You are watching a short video clip.

The goal of the person in the video is: {goal}
The specific action of interest is: {step}

Rate how far along this action is in terms of execution progress, using a scale from 0 to 9:
- 0 = the action is not present in this clip
- 1 = the action is just beginning or about to begin
- 5 = the action is halfway complete
- 9 = the action is just finishing or about to finish

Respond with a single number from 0 to 9. Do not include any other text.
"""

PREREQ_SYS_EXPECTED = (
    "You are a procedural reasoning expert who determines whether one step must be completed "
    "before another in order to correctly perform a task. Always answer with a single word: "
    '"Yes" or "No".\n'
)

PREREQ_EXPECTED = """You are performing the task: {goal}

Is the following step strictly required before another?

Prerequisite candidate: {step_b}
Target step: {step_a}

Answer "Yes" if the target step cannot be completed correctly without first completing the prerequisite step. Otherwise, answer "No".

Answer:
"""  # noqa: E501

BINARY_EXPECTED = """You are watching a video segment of someone attempting to {goal}.
Is the person currently performing the action: "{step}"?

Answer with "Yes" or "No" only.
"""

NEXT_EXPECTED = """You are watching a video segment of someone attempting to {goal}.
What is the most likely next step in the sequence?

Options:
{choices}

Answer with only the letter label of the correct option (e.g., A, B, ..., Z, AA, AB, etc.), with no extra text.
"""  # noqa: E501


@pytest.mark.parametrize(
    "key, version, text",
    [
        ("vsg", "vsg-v1", VSG_EXPECTED),
        ("prog", "prog-v1", PROG_EXPECTED),
        ("prereq_sys", "prereq-sys-v1", PREREQ_SYS_EXPECTED),
        ("prereq", "prereq-v1", PREREQ_EXPECTED),
        ("vsg_binary", "vsg-bin-v1", BINARY_EXPECTED),
        ("next", "next-v1", NEXT_EXPECTED),
    ],
)
def test_prompt_texts_and_versions(key, version, text):
    p = PROMPTS[key]
    assert p.text == text
    assert p.version == version
    assert p.text.endswith("\n") and not p.text.endswith("\n\n")


def test_versions_unique_and_sources_documented():
    versions = [p.version for p in PROMPTS.values()]
    assert len(set(versions)) == len(versions)
    assert "no file in the published code" in PROMPTS["vsg_binary"].source
    assert "no file in the published code" in PROMPTS["next"].source
    assert "prompts/vsg/question.txt" in PROMPTS["vsg"].source


def test_format_fills_fields_exactly():
    vsg = get_prompt("vsg")
    assert vsg.fields == ("goal", "choices")
    text = vsg.format(goal="Make Pancakes", choices="A. x\nB. None of the above.")
    assert text.startswith(
        "You are watching a video segment of someone attempting to Make Pancakes.\n"
    )
    assert "Options:\nA. x\nB. None of the above.\n\nAnswer" in text
    with pytest.raises(ValueError, match="missing"):
        vsg.format(goal="x")
    with pytest.raises(ValueError, match="unknown"):
        vsg.format(goal="x", choices="y", step="z")
    assert get_prompt("prereq").fields == ("goal", "step_b", "step_a")
    with pytest.raises(KeyError, match="unknown prompt"):
        get_prompt("nope")


def test_prompt_table_is_read_only_and_guards_versions():
    """PROMPTS cannot change after import; a table refuses a version shared by two texts and a
    key listed twice, and keeps one prompt listed under two keys with the same text."""
    with pytest.raises(TypeError):
        PROMPTS["vsg_alt"] = PROMPTS["vsg"]  # type: ignore[index]
    p = Prompt("vsg_alt", "vsg-alt-v1", "Goal {goal}\n{choices}\n", "test")
    table = prompt_table(*PROMPTS.values(), p)
    assert table["vsg_alt"] is p and table["vsg"] is PROMPTS["vsg"] and len(table) == 7
    assert "vsg_alt" not in PROMPTS
    with pytest.raises(
        ValueError, match="'vsg-v1' of prompt 'other' is already used by prompt 'vsg'"
    ):
        prompt_table(PROMPTS["vsg"], Prompt("other", "vsg-v1", "different {goal}", "test"))
    with pytest.raises(ValueError, match="'vsg_alt' is listed twice"):
        prompt_table(p, Prompt("vsg_alt", "vsg-alt-v2", "changed {goal}", "test"))
    same = Prompt("vsg_copy", "vsg-v1", PROMPTS["vsg"].text, "test")
    assert prompt_table(PROMPTS["vsg"], same)["vsg_copy"].version == "vsg-v1"


# --------------------------------------------------------------------------------------------
# labels


def test_excel_labels():
    assert [excel_label(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]
    with pytest.raises(ValueError):
        excel_label(-1)


def test_format_choices():
    out = format_choices(["crack eggs", "whisk"], ["A", "B", "C"])
    assert out == "A. crack eggs\nB. whisk\nC. None of the above."
    assert NONE_OPTION == "None of the above."
    with pytest.raises(ValueError, match="labels"):
        format_choices(["x"], ["A"])


class _FakeTok:
    """Single letters and AA/AB/AD are one token each; every other label splits per letter."""

    merged = {"AA": 1001, "AB": 1002, "AD": 1004}

    def encode(self, text, add_special_tokens=False):
        if text in self.merged:
            return [self.merged[text]]
        return [ord(c) for c in text]


def test_option_labels_rule_skips_colliding_labels():
    labels = option_labels(29, _FakeTok())
    # "AC" splits into A + C: its first token is A's, so it is skipped
    assert labels == [excel_label(i) for i in range(26)] + ["AA", "AB", "AD"]
    assert option_labels(5) == ["A", "B", "C", "D", "E"]


def test_option_labels_exhausted():
    class Collide:
        def encode(self, text, add_special_tokens=False):
            return [ord(text[0])]

    with pytest.raises(ValueError, match="distinct first tokens"):
        option_labels(27, Collide(), max_tries=2000)


# --------------------------------------------------------------------------------------------
# the real Qwen BPE tokenizer (offline, from dashscope's qwen.tiktoken)


@pytest.fixture(scope="module")
def qwen_tok():
    from baglm_nb.models.families import family_spec
    from baglm_nb.models.tokenizers import build_tokenizer

    return build_tokenizer(family_spec("qwen2_5_vl"))


def test_labels_beyond_z_with_qwen_tokenizer(qwen_tok):
    labels = option_labels(120, qwen_tok)
    assert len(labels) == 120 and len(set(labels)) == 120
    assert labels[:28] == [excel_label(i) for i in range(28)]
    walked = [excel_label(i) for i in range(excel_label_index(labels[-1]) + 1)]
    skipped = [lab for lab in walked if lab not in labels]
    # two-letter labels that Qwen's BPE splits into two single letters collide with A..Z
    assert skipped == ["BQ", "BZ", "CJ", "CQ", "CZ", "DQ"]
    assert labels[-1] == "DV"
    ids = check_single_tokens(qwen_tok, labels)
    assert len(set(ids.values())) == 130  # 120 labels + 10 digits, all distinct single tokens


def excel_label_index(label: str) -> int:
    n = 0
    for c in label:
        n = n * 26 + (ord(c) - ord("A") + 1)
    return n - 1


def test_digits_and_yes_no_single_tokens(qwen_tok):
    ids = check_single_tokens(qwen_tok, ["Yes", "No"], DIGITS)
    assert [qwen_tok.decode([ids[d]]) for d in DIGITS] == list(DIGITS)


def test_check_single_tokens_rejects_sentencepiece_prefix():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, **{f"▁{c}": i + 1 for i, c in enumerate("ABCDEFGHIJ0123456789")}}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    bad = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    bad.name_or_path = "bad-metaspace"
    with pytest.raises(ValueError, match=r"label 'A'.*bad-metaspace"):
        check_single_tokens(bad, ["A", "B"], None)
    with pytest.raises(ValueError, match=r"digit '0'.*bad-metaspace"):
        check_single_tokens(bad, [], DIGITS)


def test_check_single_tokens_rejects_shared_first_token():
    class Merge:
        name_or_path = "merge"

        def encode(self, text, add_special_tokens=False):
            return [ord(text[0])]

        def decode(self, ids):
            return chr(ids[0])

    with pytest.raises(ValueError, match="decodes to 'A', not 'AB'"):
        check_single_tokens(Merge(), ["A", "AB"], None)


def test_offline_tokenizer_matches_tiktoken(qwen_tok):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from baglm_nb.models.families import family_spec
    from baglm_nb.models.tokenizers import qwen_bpe_file

    pat = (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    enc = tiktoken.Encoding(
        "qwen-test",
        pat_str=pat,
        mergeable_ranks=load_tiktoken_bpe(str(qwen_bpe_file())),
        special_tokens={},
    )
    texts = [
        PROMPTS["vsg"].format(goal="Make Nigerian Style Jollof Rice", choices="A. x\nAB. y"),
        PROMPTS["prog"].format(goal="Washing the kitchen utensils`", step="rinse pot"),
        "Frame1: 12345 ZZ  AA\n\n\t  don't Ünïcödé 你是书生·万象 🙂",
    ]
    for text in texts:
        assert qwen_tok.encode(text, add_special_tokens=False) == enc.encode(text)
    specials = family_spec("qwen2_5_vl").special_tokens
    assert qwen_tok.convert_tokens_to_ids(list(specials)) == list(
        range(151643, 151643 + len(specials))
    )
    assert qwen_tok.convert_tokens_to_ids("<|video_pad|>") == 151656
    assert qwen_tok.encode("<|im_start|>user", add_special_tokens=False)[0] == 151644
