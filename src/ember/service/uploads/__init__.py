"""Uploads (service.md §3, §9): ``verifier`` (a record verified while it streams, in a process of its own, and
the pipe protocol that drives it), ``body`` (the request body as it streams, a record's or a bundle's) and
``slots`` (the limits counted in the database across server processes)."""
