"""Alembic's environment: the connection comes from ``ember.service.database`` (``config.attributes``)."""

from alembic import context

from ember.service.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
