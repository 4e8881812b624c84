"""The discrete-event simulator over the real engine: scenario, workload, traces, metrics and report
(docs/scenario.md)."""
