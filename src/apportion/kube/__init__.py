"""Readers of outside formats: kubectl dumps, watch streams."""
