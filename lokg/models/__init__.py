"""LightningModules (``*_module.py``) training the plain networks of :mod:`lokg.nn` and
:mod:`lokg.taimr.walk.net`, and their DDP helpers (:mod:`lokg.models.ddp`)."""
