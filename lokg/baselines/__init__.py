"""Baselines that replace TAIMR and/or ITTC and reuse the same KG, budget, reader and metrics.

Each is selected by ``baseline=<name>`` (configs/baseline/<name>.yaml), which sets the retriever,
the encoder, the reader's prompt template and the row label; docs/design/baselines.md.
"""

#: ``configuration`` labels of the baselines and references (``baseline=<name>``); LOKG's
#: configurations are ``lokg`` and ``paper`` (``experiment=``)
BASELINE_CONFIGURATIONS = ("kaping", "tog", "graphrag", "taimr_llmlingua", "oracle", "none")
