"""Alembic migrations of the service database (shipped inside the package)."""
