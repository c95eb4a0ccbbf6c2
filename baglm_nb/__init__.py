"""baglm-workbench: training-free online video step grounding (BaGLM) as a notebook workbench.

Modules, one concept each: ``datasets`` (annotations, ground truth, statistics), ``cache``
(Parquet score and dependency caches, import of the published files), ``simulate`` (the
labelled CPU default without model weights), ``observations`` (observation sources),
``filtering`` (the Bayesian filter), ``oracles`` (ground-truth D and progress), ``evaluation``
(R@1 protocols), ``pipeline`` (observations + D -> beliefs -> numbers).
"""

__version__ = "0.1.0"
