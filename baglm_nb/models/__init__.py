"""Stage 2, models: the LMM that scores segments and the LLM that estimates dependencies.

- :mod:`.prompts`, :mod:`.tokenizers`: the published prompts, option labels, offline tokenizers;
- :mod:`.scorers`: LMM families and the scoring engine; :mod:`.scoring`: a dataset into the cache;
- :mod:`.dependencies`: LLM back-ends and dependency matrices per task group.
"""
