"""Grid geometry shared by the simulator, the checks and the metrics, one module per algorithm.

``cells`` (indexing and neighbours), ``floor`` (a scenario's ``Grid``),
``breadth_first`` (distances lowered from sources), ``manhattan`` (the
distance to fire, walls ignored), ``reachability`` (which cells still reach
an exit) and ``exit_distances`` (the distance to the nearest exit, kept as
cells burn).  Code in ``src/`` imports from the module that holds a name.
"""
