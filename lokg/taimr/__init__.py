"""TAIMR (Sec. 2.5): node information gain, relation linking, topology path search with
semantic late fusion, and the (head, relation) path cache.  Plain Python/numpy/torch."""
