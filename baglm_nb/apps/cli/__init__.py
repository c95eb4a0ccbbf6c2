"""The command line, ``python -m baglm_nb <verb>``: :mod:`.main` builds the parser.

Every verb is one module here with ``register(verbs)``, which adds its sub-parser and sets
``func``; :data:`.main.VERBS` lists them. Keep module-level imports light (argparse only):
heavy imports (torch, transformers) belong inside the handler. Options shared by the verbs
that run the filter, and the served-model flags (:class:`.options.ServerOptions`), are in
:mod:`.options`. A verb raises on an error; only :mod:`.main` turns it into an ``error:`` line
and an exit status.
"""
