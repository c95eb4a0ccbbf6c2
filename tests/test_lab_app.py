"""``make lab``'s JupyterLab (:mod:`baglm_nb.apps.lab`): JupyterLab's own command line, started
without compiling jsonschema's IRI grammar, its defaults overridden by the user's options. What
the served Lab loads (no news, no update check, no build check) is checked on ``make lab``
itself in ``tests/test_quickstart.py``."""

from __future__ import annotations

import subprocess
import sys

#: In a fresh process: JupyterLab's --version through the module, whether the IRI grammar's
#: package loaded, then the defaults and a user's option, parsed as main passes them.
PROBE = """import sys
from baglm_nb.apps import lab
try:
    lab.main(["--version"])
except SystemExit:
    pass
print("rfc3987_syntax loaded:", sys.modules.get("rfc3987_syntax") is not None)
from jupyterlab.labapp import LabApp
app = LabApp()
app.parse_command_line(lab.lab_argv(["--LabApp.extension_manager=pypi"]))
print("news:", app.config.LabApp.news_url, "manager:", app.config.LabApp.extension_manager)
print("page config:", app.config.ServerApp.tornado_settings["page_config_data"])
"""


def test_lab_is_jupyterlabs_command_line_without_the_iri_grammar():
    import jupyterlab

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert jupyterlab.__version__ in out.stdout  # JupyterLab's own --version answered
    assert "rfc3987_syntax loaded: False" in out.stdout
    assert "news: None manager: pypi" in out.stdout  # the user's option won
    assert "page config: {'buildCheck': False}" in out.stdout
