"""Stage 1, inputs: what a video and its annotation are.

- :mod:`.datasets`: the four annotation formats as one :class:`~.datasets.Video` record,
  dataset statistics;
- :mod:`.grid`: the published time grids (frame sampling, segments, per-second rows, ground
  truth, first annotated starts);
- :mod:`.video`: streaming decoding on that grid, probing, finding a video's file
  (:mod:`.video_records`: what it reports and yields);
- :mod:`.live`: live streams and cameras read frame by frame on the stream grid, with a lag
  policy (PyAV);
- :mod:`.paper`: every number the paper reports, in one table.

Frame preprocessing per model family is the models stage's (each family spec's, in
:mod:`baglm_nb.models.families`).
"""
