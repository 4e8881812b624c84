"""Users, tokens and YARN's ACLs.

A caller is named as Hadoop's simple authentication names it: `?user.name=USER` (answered with a
signed `hadoop.auth` cookie, which later requests may carry instead, as yarn-api-client's SimpleAuth
does), or by `Authorization: Bearer TOKEN` with a token made by `apportion token create USER` (stored
as a digest only).

ACLs are off unless the service starts with `--acls`. Then each queue's ACLs come from its
annotations `apportion.io/acl-submit-applications`, `apportion.io/acl-administer-queue`,
`apportion.io/acl-submit-reservations`, `apportion.io/acl-list-reservations` and
`apportion.io/acl-administer-reservations`, in YARN's form: `*` (everyone), or comma-separated users
(a space, then groups, which apportion does not resolve). An unset ACL is inherited from the parent
queue; at the root it is `*`, as YARN's defaults are. Administrators (`--admin`) pass every ACL.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping

from apportion.lean_dataclass import dataclass

COOKIE = "hadoop.auth"
ACL_NAMES = ("acl_submit_applications", "acl_administer_queue", "acl_submit_reservations",
             "acl_list_reservations", "acl_administer_reservations")


def acl_annotation(acl: str) -> str:
    """The queue annotation holding an ACL: `acl_submit_reservations` -> `apportion.io/acl-submit-reservations`."""
    return "apportion.io/" + acl.replace("_", "-")


def new_token() -> str:
    """A fresh bearer token (shown once, stored hashed)."""
    return "apt_" + secrets.token_urlsafe(32)


class CookieSigner:
    """Hadoop's `hadoop.auth` cookie: `u=USER&p=USER&t=simple&e=EXPIRY&s=SIGNATURE`."""

    def __init__(self, secret: bytes, ttl_s: int = 36_000) -> None:
        self.secret = secret
        self.ttl_s = ttl_s
        #: the Set-Cookie value last made for each user, and when (monotonic seconds)
        self._headers: dict[str, tuple[float, bytes]] = {}

    def _sign(self, text: str) -> str:
        mac = hmac.new(self.secret, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def make(self, user: str) -> str:
        """A cookie value for `user`."""
        text = f"u={user}&p={user}&t=simple&e={int((time.time() + self.ttl_s) * 1000)}"
        return f"{text}&s={self._sign(text)}"

    def set_cookie(self, user: str) -> bytes:
        """The `Set-Cookie` header value that names `user`. A cookie lasts `ttl_s` (hours), so the one
        made in the last minute is given again: signing one on every answer was a tenth of a small
        request's server time."""
        now = time.monotonic()
        made = self._headers.get(user)
        if made is None or now - made[0] > 60:
            if len(self._headers) > 10_000:
                self._headers.clear()
            value = f'{COOKIE}="{self.make(user)}"; HttpOnly; Path=/; SameSite=strict'.encode()
            made = self._headers[user] = (now, value)
        return made[1]

    def user(self, value: str) -> str | None:
        """The user of a valid, unexpired cookie, else None."""
        value = value.strip('"')
        text, sep, sig = value.rpartition("&s=")
        if not sep or not hmac.compare_digest(sig, self._sign(text)):
            return None
        fields = dict(p.split("=", 1) for p in text.split("&") if "=" in p)
        try:
            if int(fields.get("e", "0")) < time.time() * 1000:
                return None
        except ValueError:
            return None
        return fields.get("u") or None


@dataclass(frozen=True)
class QueueMeta:
    """What the ACLs read of a queue: its parent and annotations."""

    name: str
    parent: str
    annotations: Mapping[str, str]


Queues = Mapping[str, QueueMeta]


@dataclass(frozen=True)
class Refusal:
    """A refused call: 403 with a RemoteException naming the ACL."""

    user: str
    operation: str
    queue: str
    acl: str

    def message(self) -> str:
        """The RemoteException message."""
        return (f"User {self.user} cannot perform operation {self.operation} on queue {self.queue}: "
                f"refused by {self.acl}")


class Refused(Exception):
    """Raised by a job whose ACL check failed (answered 403 naming the ACL)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message())
        self.refusal = refusal


def _allows(acl: str, user: str) -> bool:
    users = acl.split(" ", 1)[0]
    if acl.strip() == "*":
        return True
    return user in {u.strip() for u in users.split(",") if u.strip()}


class Acls:
    """YARN's queue and reservation ACLs over the current queue tree."""

    def __init__(self, enabled: bool, admins: tuple[str, ...]) -> None:
        self.enabled = enabled
        self.admins = frozenset(admins)

    def effective(self, snap: Queues, queue: str, acl: str) -> str:
        """The ACL of a queue: its own, else its parent's, else `*` at the root."""
        seen: set[str] = set()
        q = snap.get(queue)
        while q is not None and q.name not in seen:
            seen.add(q.name)
            v = q.annotations.get(acl_annotation(acl))
            if v is not None:
                return v
            q = snap.get(q.parent) if q.parent else None
        return "*"

    def check(self, snap: Queues, user: str, queue: str, operation: str, *acls: str) -> Refusal | None:
        """None when any of `acls` lets `user` do `operation` on `queue` (or ACLs are off)."""
        if not self.enabled or user in self.admins:
            return None
        for acl in acls:
            if _allows(self.effective(snap, queue, acl), user):
                return None
        return Refusal(user, operation, queue, acls[0])

    def check_admin(self, user: str, what: str) -> Refusal | None:
        """Cluster-wide objects (nodes, priority classes, the scheduler conf): administrators only."""
        if not self.enabled or user in self.admins:
            return None
        return Refusal(user, "ADMINISTER_CLUSTER", what, "yarn.admin.acl")
