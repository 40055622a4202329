"""Isolation: running foreign code so that it only ever answers observations with actions (isolation.md).

``sandbox`` (bubblewrap, the fixed environment, ``cgroups``, and run by
root the ``seccomp_filter`` that keeps a policy from making a user namespace), ``host``
(the python-policy host that runs inside it) and ``probe`` (what a
``required`` sandbox needs that this machine lacks).  Nothing is imported
here: the host must load nothing it does not need.
"""
