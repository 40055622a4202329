"""Exports of EMBER episodes for outside tools (docs/interop.md).

- ``trajectories``: an episode as PedPy's plain-text trajectory format
  (``id frame x y z``), streamed from the record through the engine;
- ``geometry``: the floor as PedPy geometry (walkable area, one
  measurement line per way into each exit), as WKT in a JSON file;
- ``pedpy``: ``load(scenario, record)`` gives PedPy's own objects (the
  ``analysis`` extra, imported there only, when called).

Positions are cell centres in metres (``coordinates``); the cell size and
the step duration are exact (``scale``).
"""
