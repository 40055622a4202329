"""The endpoints of the HTTP API (service.md §3), one module per group; ``app.py`` is their route table.

Each endpoint is a module-level function of the request; what they share is ``request.app.state.service``
(``state.Service``).  Endpoints that read or write the database are plain functions, which Starlette runs
in its thread pool; the two uploads (an episode's record, a hidden-track bundle) are coroutines that read
their body as it streams.
"""
