"""The hidden track (service.md §6, §9): ``bundles`` (a team's agent bundle, checked whole), ``jobs`` (a
bundle's job: its folder, its lease, its status), ``evaluator`` (the ``serve`` parent's thread that runs the
jobs' campaigns in the sandbox and commits their rows), ``endpoints`` (``POST /api/boards/{board}/agents``,
``GET /api/jobs/{id}``) and ``secrecy`` (the keys kept until the reveal, the reveal, the commitment check).
"""
