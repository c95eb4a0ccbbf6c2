"""Stage 3, models: the LMM that scores segments and the LLM that estimates dependencies.

- :mod:`.prompts`, :mod:`.tokenizers`: the published prompts, option labels, offline tokenizers;
- LMM: :mod:`.registry` (the models and loading them), :mod:`.families` (one spec per family:
  its registry rows, options, frame preprocessing, adapter, special tokens, served layout and
  pixel bounds, tiny test config), :mod:`.preprocess` / :mod:`.resample` (the frame operations
  the families' preprocessing shares),
  :mod:`.engine` (the scorer), :mod:`.served` (the scorer through an OpenAI-compatible server),
  :mod:`.questions` (what both ask and how the answers combine), :mod:`.testing` (tiny random
  models); :mod:`.scoring`: a dataset into the score cache;
- LLM: :mod:`.dependencies` (one matrix per task group, resumable), its back-ends
  :mod:`.llm_local` (transformers) and :mod:`.llm_openai` (an OpenAI-compatible server), and
  :mod:`.gguf` (GGUF files converted once, both ways);
- :mod:`.openai_client`: the key, retry and error rules of every OpenAI-compatible client;
- :mod:`.kv_prefix`: shared prompt prefixes run once from KV caches (LMM and LLM).
"""
