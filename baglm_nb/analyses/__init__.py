"""Stage 5, analyses: the paper's tables and figures from the core's numbers.

- :mod:`.paper`: every number the paper reports, in one table;
- :mod:`.reports`, :mod:`.analysis`: result tables beside the paper;
- :mod:`.localization`: LoG step localization and its metrics; :mod:`.plots`: the figures.
"""
