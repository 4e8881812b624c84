"""YARN's ReservationSystem as a library: definitions, step functions, plans, sharing policies, agents,
the replanner, the plan follower and the REST handlers (docs/reservation.md)."""
