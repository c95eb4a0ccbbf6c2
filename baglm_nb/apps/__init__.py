"""Stage 6, apps: what a person runs.

- :mod:`.cli`: ``python -m baglm_nb <verb>``, a module per verb or family of verbs;
- :mod:`.widgets`: the notebook explorer; :mod:`.online`: following a video or a live
  source with the online core (:mod:`baglm_nb.core.online`), its event log and HTML report;
- :mod:`.render`: an executed notebook made shareable (no saved widgets, self-contained HTML);
- :mod:`.lab`: ``make lab``'s JupyterLab (``jupyter lab``'s command line, a cheaper start).
"""
