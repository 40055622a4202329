"""Isolation: running foreign code so that it only ever answers observations with actions (isolation.md).

``sandbox`` (bubblewrap, the fixed environment, ``cgroups``), ``host``
(the python-policy host that runs inside it) and ``probe`` (what a
``required`` sandbox needs that this machine lacks).  Nothing is imported
here: the host must load nothing it does not need.
"""
