"""Alembic migrations of the service's database (run by ``ember.service.database``, never by hand)."""
