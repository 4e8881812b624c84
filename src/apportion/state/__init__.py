"""The cluster-state cache: Kubernetes objects changed only by watch events, snapshots for sessions, and
the way a session's decisions come back (Binder, Evictor, StatusUpdater)."""
