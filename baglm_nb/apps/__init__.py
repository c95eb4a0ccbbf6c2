"""Stage 6, apps: what a person runs.

- :mod:`.cli`: ``python -m baglm_nb <verb>``, one module per verb;
- :mod:`.widgets`: the notebook explorer; :mod:`.online` and :mod:`.online_report`: online
  grounding of a live video and its HTML report;
- :mod:`.render`: an executed notebook made shareable (no saved widgets, self-contained HTML).
"""
