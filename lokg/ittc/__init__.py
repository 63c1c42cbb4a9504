"""ITTC: Information-Theoretic Triple Compression encoding (Sec. 2.4, Eqs. (7)-(11)).

- :mod:`lokg.ittc.order`: prefix-uncertainty encoding order σ*, Eqs. (7)-(8)
- :mod:`lokg.ittc.render`: compact / balanced / verbose renderings and the naive template
- :mod:`lokg.ittc.value`: information value v(t, k), Eqs. (9)-(10)
- :mod:`lokg.ittc.mckp`: the multiple-choice knapsack, Eq. (11) (Numba DP, greedy)
- :mod:`lokg.ittc.group`: the grouped rendering, one line per (subject, relation), as MCKP
  classes (beyond the paper, ``encoder.group_objects``, off by default)
- :mod:`lokg.ittc.encoder`: the encoders (ITTC, naive, truncate) and :class:`EncodedContext`
"""

from lokg.ittc.encoder import (
    ORDER_OPTIONS,
    EncodedContext,
    Encoder,
    ITTCEncoder,
    NaiveEncoder,
    TruncateEncoder,
)
from lokg.ittc.mckp import MCKPSolution, solve, solve_dp, solve_greedy
from lokg.ittc.order import ORDERS, EncodingOrder, select_order
from lokg.ittc.render import GRANULARITIES, TripleRenderer
from lokg.ittc.value import query_boost, triple_values

__all__ = [
    "GRANULARITIES",
    "ORDERS",
    "ORDER_OPTIONS",
    "EncodedContext",
    "Encoder",
    "EncodingOrder",
    "ITTCEncoder",
    "MCKPSolution",
    "NaiveEncoder",
    "TripleRenderer",
    "TruncateEncoder",
    "query_boost",
    "select_order",
    "solve",
    "solve_dp",
    "solve_greedy",
    "triple_values",
]
