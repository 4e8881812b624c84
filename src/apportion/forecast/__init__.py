"""Forecasts: when each pending job will start, by simulating forward from the cluster as it is, and
what a change to the cluster would make of that (`apportion forecast`, `apportion diff`)."""
