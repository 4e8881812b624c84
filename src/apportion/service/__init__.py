"""`apportion serve`: the scheduler and the reservation system as a persistent HTTP service.

YARN's RM REST API at the root (`yarn.py`), apportion's own API under `/api/v1` (`api_v1.py`), one
writer thread that owns the plans and the cluster objects (`writer.py`), the database behind them
(`db.py`, `store.py`, Alembic migrations in `migrations/`), the scheduling loop (`loop.py`), users,
tokens and ACLs (`auth.py`) and Prometheus metrics (`metrics.py`); `app.py` joins them.
"""
