"""apportion: Volcano's queue scheduling and YARN's reservation system, joined, in Python."""

__version__ = "0.1.0"
