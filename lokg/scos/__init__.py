"""SCOS: Semantic Compression of Ontology Schema (paper Section 2.3, Eqs. (3)-(6)).

Offline and LLM-free: ``compress(kg, relation_embeddings, cfg)`` returns the mapping
phi: R0 -> R*, the compressed graph and the merge report (:class:`SCOSResult`).
"""

from lokg.scos.compress import SCOSResult, compress, information_density
from lokg.scos.config import SCOSConfig

__all__ = ["SCOSConfig", "SCOSResult", "compress", "information_density"]
