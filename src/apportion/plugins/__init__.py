"""Scheduler plugins, one module each; `registry` maps Volcano's plugin names to classes."""
