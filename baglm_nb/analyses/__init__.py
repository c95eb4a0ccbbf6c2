"""Stage 5, analyses: the paper's tables and figures from the core's numbers (the paper's own
numbers: :mod:`baglm_nb.inputs.paper`).

- :mod:`.tables`: what every result table shares (names, titles, rows, items, files);
- :mod:`.results`, :mod:`.ablations`, :mod:`.breakdowns`, :mod:`.timing`, :mod:`.qualitative`:
  the result tables beside the paper;
- :mod:`.localization`: LoG step localization and its metrics; :mod:`.plots`: the figures;
- :mod:`.display`: what a notebook shows (tables in full, figures saved and shown inline).
"""
