"""The engine: the one entry point every reader of records uses, and ``measure_run``.

- ``core``: ``EpisodeEngine``, the sink that validates, replays and measures;
- ``read``: ``read_record`` (pull), ``MetricsStream`` (push), ``episode_metrics``, ``measure_record``;
- ``authenticate``: ``authenticate_record``, ``AuthenticationStream``, ``DigestStream``, ``ComparisonStream``;
- ``run``: ``measure_run``, an episode of EMBER's simulator measured as it runs;
- ``replay``: ``verify_replay``.

Callers import each name from the module that holds it.
"""
