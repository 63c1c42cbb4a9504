"""The learned walk (beyond the paper; docs/design/taimr.md, "Learned walk"), in one place:

- :mod:`~lokg.taimr.walk.net`: the network (:class:`~lokg.taimr.walk.net.WalkNet`) and the
  step-relation features it reads;
- :mod:`~lokg.taimr.walk.graph`: a question's walk graph, both edge directions;
- :mod:`~lokg.taimr.walk.supervision`: the paths a training question is trained to follow;
- :mod:`~lokg.taimr.walk.search`: the walk's beam searches (:func:`beam_search` over a built
  walk graph, :func:`beam_walk` building only the steps it keeps): its step sources for
  the one beam search, :func:`lokg.taimr.beam.search_paths`;
- :mod:`~lokg.taimr.walk.artifact`: the exported model (file names, save/load, the default
  trained model's lookup);
- :mod:`~lokg.taimr.walk.retriever`: ``retriever=learned``
  (:class:`~lokg.taimr.walk.retriever.WalkRetriever`).

Its LightningModule is :class:`lokg.models.walk_module.WalkModule`; its configs
``model=walk`` and ``experiment=train_walk``.
"""
