"""The maximum-flow solver: scipy's (``scipy.sparse.csgraph.maximum_flow``, Dinic's algorithm).

scipy is an extra (``bounds``), imported here only, when a flow is asked for.
"""

import numpy as np

from ..errors import MissingExtraError


def maximum_flow(nodes, tails, heads, source, sink, want_flow=False):
    """The value of a maximum ``source``-``sink`` flow on the arcs tails[i] -> heads[i], each of capacity 1.

    With ``want_flow``: also the arcs carrying a unit, as a pair (tails, heads) of arrays.
    """
    try:
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import maximum_flow as scipy_maximum_flow
    except ImportError as exc:
        raise MissingExtraError(
            f"ember bounds needs scipy (the bounds extra): pip install 'ember-eval[bounds]' ({exc})"
        ) from None
    capacity = np.ones(len(tails), dtype=np.int32)
    graph = csr_array((capacity, (tails, heads)), shape=(nodes, nodes))
    del capacity
    result = scipy_maximum_flow(graph, source, sink, method="dinic")
    value = int(result.flow_value)
    if not want_flow:
        return value, None
    flow = result.flow.tocoo()
    carried = flow.data > 0
    return value, (flow.row[carried].astype(np.int64), flow.col[carried].astype(np.int64))
