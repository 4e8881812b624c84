"""Real backends for the service: the scheduler's decisions carried out on a real cluster (Ray)."""
