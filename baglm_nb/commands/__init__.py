"""Extra ``python -m baglm_nb`` verbs, one module each.

Every module here defines ``register(verbs)``, which adds its sub-parser to the argparse
sub-parsers object and sets ``func``. Keep module-level imports light (argparse only): heavy
imports (torch, transformers) belong inside the handler.
"""
