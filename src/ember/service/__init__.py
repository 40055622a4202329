"""The EMBER service (service.md): boards, uploads verified while they stream, the audit log, exports.

The ``service`` extra (Starlette, uvicorn, SQLAlchemy, Alembic, psycopg,
httpx); nothing in the core imports this package.  Its parts:
``tables`` and ``migrations`` (the schema), ``database`` (SQLite or
PostgreSQL), ``registry`` (teams, tokens, boards: the commands'),
``store`` (the content-addressed record store), ``audit`` (the hash
chain), ``submissions`` (rows in and out), ``uploads`` (streaming
verification and limits), ``app`` (the HTTP API), ``exporting`` and
``derived`` (results directories and the files the API serves),
``operations`` (reverify, backup), ``serve`` and ``client``
(``ember submit``).
"""
