"""Imported at start-up by every Python process of the test Ray cluster (``tests/test_ray.py``
puts this folder first on the cluster's ``PYTHONPATH``).

``import ray`` imports jsonschema, which imports the optional ``rfc3987_syntax`` package when it
is installed (Jupyter pulls it in); that package builds a Lark grammar at import time, about 4 s
of CPU in each of the cluster's many Python processes (GCS helpers, agents, every worker) on a
2-core machine. Nothing here validates IRIs, so the optional import is turned off for the
cluster's processes only: jsonschema then simply has no IRI format checker.
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)
