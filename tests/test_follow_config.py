"""``follow`` as a config: its flags become one frozen FollowConfig (apps/follow_config.py), the
run reads only that, and a run stopped by a signal raises Interrupted, which only
apps/cli/main.py turns into an exit status."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from baglm_nb.apps.cli.follow import follow_config
from baglm_nb.apps.cli.main import EXIT_INTERRUPTED, build_parser, main
from baglm_nb.apps.follow_config import DEFAULT, FollowConfig
from baglm_nb.apps.online.ending import Interrupted

UID = "-25-1nbOki0"  # HT-Step


def _parsed(*argv: str) -> FollowConfig:
    return follow_config(build_parser().parse_args(["follow", *argv]))


def test_the_defaults_are_the_configs_own():
    assert _parsed("--replay", "--", UID) == dataclasses.replace(
        DEFAULT, source=UID, replay="simulated"
    )
    assert DEFAULT == FollowConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.threshold = 0.9


def test_each_flag_sets_its_field():
    """Every field but ``replay`` (``--model`` instead) given a value other than its default:
    each lands in its own field, the units in the names."""
    given = _parsed(
        *("clip.mp4", "--model", "m", "--dataset", "coin", "--task", "t.json"),
        *("--deps", "oracle", "--pace", "realtime", "--growing", "--timeout", "3"),
        *("--camera", "0", "--live", "--lag", "drop", "--reconnect", "2"),
        *("--reconnect-window", "30", "--transport", "udp", "--transition", "static"),
        *("--threshold", "0.7", "--patience", "4", "--lag-segments", "5", "--stay", "0.25"),
        *("--no-alerts", "--alert-threshold", "0.3", "--jsonl", "e.jsonl", "--html", "r.html"),
    )
    assert given == FollowConfig(
        source="clip.mp4",
        model="m",
        dataset="coin",
        task_path="t.json",
        deps="oracle",
        pace="realtime",
        growing=True,
        timeout_s=3.0,
        camera=0,
        live=True,
        lag_policy="drop",
        reconnect=2,
        reconnect_window_s=30.0,
        transport="udp",
        transition="static",
        threshold=0.7,
        patience_segments=4,
        lag_segments=5,
        stay=0.25,
        alerts=False,
        alert_threshold=0.3,
        jsonl_path="e.jsonl",
        html_path="r.html",
    )
    unchanged = [
        f.name
        for f in dataclasses.fields(FollowConfig)
        if getattr(given, f.name) == getattr(DEFAULT, f.name)
    ]
    assert unchanged == ["replay"]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--lag-segments", "-1"], "--lag-segments"),
        (["--lag-segments", "inf"], "--lag-segments"),
        (["--stay", "1"], "--stay"),
        (["--timeout", "0"], "--timeout"),
        (["--reconnect-window", "-2"], "--reconnect-window"),
    ],
)
def test_a_bad_value_is_refused_before_the_config_exists(argv, flag):
    with pytest.raises(ValueError, match=flag):
        _parsed("--replay", *argv, "--", UID)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_stopped_by_a_signal_exits_128_plus_it(monkeypatch, capsys, signum, status):
    """The run prints its own end and raises Interrupted(signum): main exits 130 after Ctrl-C
    and 143 after SIGTERM, with no ``error:`` line (the run said why it ended)."""
    from baglm_nb.apps.online import session

    def stopped(config: FollowConfig, build_scorer) -> int:
        assert config.source == UID and config.replay == "simulated"
        print("status: 3 segments; interrupted")
        raise Interrupted(signum)

    monkeypatch.setattr(session, "run_follow", stopped)
    assert main(["follow", "--replay", "--", UID]) == status
    out = capsys.readouterr()
    assert out.out == "status: 3 segments; interrupted\n" and out.err == ""
    assert Interrupted(signum).signum == signum and isinstance(
        Interrupted(signum), KeyboardInterrupt
    )


def test_an_interrupt_the_verb_did_not_report_is_one_line(monkeypatch, capsys):
    from baglm_nb.apps.online import session

    def pressed(config: FollowConfig, build_scorer) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "run_follow", pressed)
    assert main(["follow", "--replay", "--", UID]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "error: interrupted\n"


def test_an_interrupt_while_the_command_line_is_read_is_the_same_one_line(monkeypatch, capsys):
    """Ctrl-C before the verb starts (the command line being read, on a busy machine) ends as
    one during the verb does: ``error: interrupted`` and 130, no traceback."""
    import argparse

    def pressed(self, args=None, namespace=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", pressed)
    assert main(["follow", "--replay", "--", UID]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "error: interrupted\n"


def test_a_command_line_that_cannot_be_built_is_a_traceback(monkeypatch):
    """A bug in building the command line is not dressed up as bad input: it propagates."""
    import baglm_nb.apps.cli.main as cli_main

    def broken():
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_main, "build_parser", broken)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["follow", "--replay", "--", UID])
