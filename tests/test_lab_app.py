"""``make lab``'s JupyterLab (:mod:`baglm_nb.apps.lab`): JupyterLab's own command line, started
without compiling jsonschema's IRI grammar, its defaults replaced by the user's options. What
the served Lab loads (no news, no update check, no build check) is checked on ``make lab``
itself in ``tests/test_quickstart.py``; this file runs in the test process (JupyterLab's
start is stubbed: the server is not what is checked here)."""

from __future__ import annotations

import sys

import pytest

from baglm_nb.apps import lab


def test_main_skips_the_iri_grammar_before_jupyterlab_starts(monkeypatch):
    from jupyterlab.labapp import LabApp

    seen = {}

    def launch(cls, argv=None):
        seen.update(argv=argv, iri=sys.modules.get("rfc3987_syntax", "not blocked"))

    monkeypatch.setattr(LabApp, "launch_instance", classmethod(launch))
    # as in a fresh process: jsonschema not imported yet, its IRI grammar's package neither
    monkeypatch.delitem(sys.modules, "jsonschema", raising=False)
    monkeypatch.delitem(sys.modules, "rfc3987_syntax", raising=False)
    lab.main(["--port=8765", "--no-browser"])
    assert seen["iri"] is None  # "import rfc3987_syntax" fails: jsonschema goes without it
    assert seen["argv"] == [*lab.LAB_DEFAULTS, "--port=8765", "--no-browser"]


@pytest.mark.filterwarnings("ignore:--tornado_settings=:DeprecationWarning")  # LAB_DEFAULTS
def test_a_users_option_replaces_the_default():
    """JupyterLab refuses a setting given twice; the user's wins over :data:`LAB_DEFAULTS`."""
    from jupyterlab.labapp import LabApp

    argv = lab.lab_argv(["--LabApp.extension_manager=pypi", "--port=8765"])
    assert "--LabApp.extension_manager=readonly" not in argv
    app = LabApp()
    app.parse_command_line(argv)
    assert app.config.LabApp.extension_manager == "pypi"  # the user's
    assert app.config.LabApp.news_url is None  # the defaults the user left
    assert app.config.ServerApp.tornado_settings["page_config_data"] == {"buildCheck": False}
    assert app.config.ServerApp.port == 8765
