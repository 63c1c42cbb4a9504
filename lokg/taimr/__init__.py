"""TAIMR (Sec. 2.5): node information gain, relation linking, topology path search with
semantic late fusion, and the (head, relation) path cache; the one beam search over paths
(:mod:`lokg.taimr.beam`) that TAIMR, the learned walk and the GAT's validation share.
Plain Python/numpy/torch."""
