"""One exception type per layer; the CLI turns each into exit code 2 and a one-line message."""

from __future__ import annotations


class ApportionError(Exception):
    """Base of every error apportion reports to a user (never shown as a traceback)."""


class InputError(ApportionError):
    """Bad input: a file, document, field or request that is wrong. Exit status 2."""

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        self.bare = message
        super().__init__(f"{where}: {message}" if where else message)


class QuantityError(InputError):
    """A Kubernetes quantity that does not parse."""


class ConfError(InputError):
    """A scheduler configuration that Volcano would reject."""


class InternalError(ApportionError):
    """A broken invariant (Volcano would panic). Exit status 1."""
