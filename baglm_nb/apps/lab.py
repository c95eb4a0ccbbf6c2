"""JupyterLab for the explorer as ``make lab`` starts it: ``python -m baglm_nb.apps.lab [...]``.

JupyterLab's own command line (``jupyter lab``: every option passes through; one the user gives
replaces the default of :data:`LAB_DEFAULTS` for that setting, :func:`lab_argv`), in a process
that

- imports jsonschema without the IRI grammar (:func:`baglm_nb.apps.render.skip_iri_grammar`):
  the server imports jsonschema at start (jupyter_events), and that grammar is most of the CPU
  a server start costs; no Jupyter schema uses the ``iri`` formats;
- loads nothing from the network and runs no build tool while a page loads
  (:data:`LAB_DEFAULTS`): no news feed and no update check (JupyterLab's announcements), an
  extension manager that lists the installed extensions without querying PyPI, and no build
  check (the Lab of ``.venv`` is prebuilt by pip: the check runs node and yarn on the server
  each time a page opens, only to find nothing to build).

Exports :data:`LAB_DEFAULTS`, :func:`lab_argv` and :func:`main`.
"""

from __future__ import annotations

import sys

from baglm_nb.apps.render import skip_iri_grammar

__all__ = ["LAB_DEFAULTS", "lab_argv", "main"]

#: The options ``make lab`` gives JupyterLab unless the user gives them (module docstring).
LAB_DEFAULTS = (
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
    "--LabApp.extension_manager=readonly",
    # a whole dict, the only form that carries a boolean (traitlets 5 calls it deprecated in
    # favour of key=value items, whose values are strings); it replaces tornado_settings from a
    # jupyter_server_config.py: give the option in LAB_ARGS to keep your own
    "--ServerApp.tornado_settings={'page_config_data': {'buildCheck': False}}",
)


def lab_argv(argv: list[str]) -> list[str]:
    """:data:`LAB_DEFAULTS` and then ``argv``, less each default whose option ``argv`` gives (a
    JupyterLab option given twice is an error, not an override)."""
    given = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    return [d for d in LAB_DEFAULTS if d.split("=", 1)[0] not in given] + list(argv)


def main(argv: list[str] | None = None) -> int | None:
    """Run JupyterLab with :func:`lab_argv` of ``argv`` (default: ``sys.argv[1:]``)."""
    skip_iri_grammar()
    from jupyterlab.labapp import LabApp

    return LabApp.launch_instance(argv=lab_argv(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
