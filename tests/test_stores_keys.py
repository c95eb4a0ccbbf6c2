"""baglm_nb.stores.keys: cache keys and their folders; the stores modules' exports."""

from __future__ import annotations

import importlib
import json

import pytest

from baglm_nb.stores.keys import DependencyKey, ScoreKey


def test_score_key_relpath_and_dict() -> None:
    key = ScoreKey("htstep", "OpenGVLab/InternVL2_5-8B", "v1", 2, 2.0)
    assert key.relpath() == "scores/htstep/OpenGVLab__InternVL2_5-8B/v1/seg2s_fps2"
    assert ScoreKey("a", "b", "c", 3, 1.5).relpath() == "scores/a/b/c/seg3s_fps1.5"
    assert ScoreKey.from_dict(key.to_dict()) == key
    assert json.loads(json.dumps(key.to_dict())) == key.to_dict()
    assert ScoreKey("a", "b", "c").relpath().count("/") == 4
    for bad in ("", "  ", "..", "."):
        with pytest.raises(ValueError, match="model"):
            ScoreKey("htstep", bad, "v1")
    with pytest.raises(ValueError, match="source"):
        ScoreKey("htstep", "m", "v1", source="llm")
    with pytest.raises(ValueError, match="segment_duration"):
        ScoreKey("htstep", "m", "v1", segment_duration=1.5)
    with pytest.raises(ValueError, match="sampling_fps"):
        ScoreKey("htstep", "m", "v1", sampling_fps=0)
    with pytest.raises(ValueError, match="unknown"):
        ScoreKey.from_dict({**key.to_dict(), "extra": 1})


def test_dependency_key_relpath_and_dict() -> None:
    key = DependencyKey("coin", "meta-llama/Llama-3.3-70B-Instruct", "published")
    assert key.relpath() == "deps/coin/meta-llama__Llama-3.3-70B-Instruct/published"
    assert DependencyKey.from_dict(key.to_dict()) == key
    with pytest.raises(ValueError, match="dataset"):
        DependencyKey("", "oracle", "v1")


@pytest.mark.parametrize("module", ["keys", "parquet", "scores", "dependencies", "importer"])
def test_module_exports(module: str) -> None:
    mod = importlib.import_module(f"baglm_nb.stores.{module}")
    assert mod.__doc__
    for name in mod.__all__:
        assert getattr(mod, name).__doc__
