"""baglm-workbench: training-free online video step grounding (BaGLM) as a notebook workbench.

The package's folders are the pipeline's stages, in data-flow order: :mod:`.inputs` (videos,
annotations, time grids), :mod:`.models` (LMM scorers, LLM dependency back-ends), :mod:`.stores`
(caches), :mod:`.core` (sources, filter, evaluation), :mod:`.analyses` (tables, localization,
figures) and :mod:`.apps` (CLI, widgets, online). ``docs/architecture.md`` is the map.

Stable import paths kept for users' notebooks: :mod:`baglm_nb.datasets`,
:mod:`baglm_nb.filtering`, :mod:`baglm_nb.evaluation`, :mod:`baglm_nb.simulate`,
:mod:`baglm_nb.localization` and :mod:`baglm_nb.online`.
"""

__version__ = "0.1.0"
