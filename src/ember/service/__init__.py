"""The EMBER service (service.md): boards, uploads verified while they stream, the audit log, exports.

The ``service`` extra (Starlette, uvicorn, SQLAlchemy, Alembic, psycopg,
httpx); nothing in the core imports this package.  Its parts:
``tables`` and ``migrations`` (the schema), ``database`` (SQLite or
PostgreSQL), ``config`` (``service.toml``: ``ServiceLimits``),
``registry`` (teams, tokens, boards: the commands'), ``boards`` (a board
as read), ``store`` (the content-addressed record store), ``audit`` (the
hash chain) and ``anchor`` (its signed head), ``submissions`` (rows in
and out, an episode's upload), ``uploads`` (the verifier, the body
reader, the slots), ``hidden`` (the hidden track: bundles, jobs,
evaluator, endpoints, secrecy), ``app`` (the route table of the HTTP
API) with ``endpoints`` (its functions), ``state`` (what they share),
``responses`` and ``errors`` (answers and refusals), ``protocol``
(uvicorn's header limits), ``export``, ``derived`` and ``folders`` (a
board's export, the derived files the API serves, where they live), ``pages`` (the board
pages), ``operations`` (reverify, backup), ``serve`` and ``client``
(``ember submit``).
"""
