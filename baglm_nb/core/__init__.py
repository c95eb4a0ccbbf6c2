"""Stage 4, core: observations + dependencies -> beliefs -> R@1.

- :mod:`.sources`: the one resolver of ``scores`` / ``deps`` settings;
- :mod:`.observations`: per-second observation rows; :mod:`.simulate`: the simulated default;
- :mod:`.oracles`: ground-truth D and progress; :mod:`.filtering`: the Bayesian filter;
- :mod:`.evaluation`: the R@1 protocols; :mod:`.pipeline`: run and compare.
"""
