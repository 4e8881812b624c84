"""The reservation form: its fields, their checks, and the YARN submit body it becomes.

Times are given in minutes from now (the service clock) and turned into YARN's epoch milliseconds;
amounts are YARN's (memory in MB, vCores). A field the form can check by itself (a number, a
choice, a stage half filled in) gets its error next to it before anything is sent; the rest (the
deadline in the past, a gang larger than the plan, no room in the plan) is what YARN's own handler
answers, shown next to the field the message is about. Nothing is stored unless the handler
accepts the reservation.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP

INTERPRETERS = {"R_ALL": R_ALL, "R_ANY": R_ANY, "R_ORDER": R_ORDER, "R_ORDER_NO_GAP": R_ORDER_NO_GAP}
STAGES = 4
STAGE_FIELDS = (("memory", "memory (MB)"), ("vcores", "vCores"), ("containers", "containers"),
                ("concurrency", "min concurrency"), ("duration", "duration (min)"))
MINUTE_MS = 60_000


@dataclass
class ReservationForm:
    """What the user typed, and the errors per field (`form` for the whole form)."""

    values: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @classmethod
    def blank(cls, user: str, queue: str) -> ReservationForm:
        """The form as first shown: one stage filled in with a small example."""
        v = {"user": user, "queue": queue, "name": "", "interpreter": "R_ALL", "arrival": "5", "deadline": "65",
             "stage-0-memory": "4096", "stage-0-vcores": "2", "stage-0-containers": "4",
             "stage-0-concurrency": "4", "stage-0-duration": "30"}
        return cls(v)

    def get(self, key: str) -> str:
        """A field's value as typed."""
        return self.values.get(key, "")

    def _int(self, key: str, least: int, what: str) -> int | None:
        raw = self.get(key).strip()
        if not raw:
            self.errors[key] = f"{what} is required"
            return None
        try:
            v = int(raw)
        except ValueError:
            self.errors[key] = f"{what} must be a whole number"
            return None
        if v < least:
            self.errors[key] = f"{what} must be at least {least}"
            return None
        return v

    def to_body(self, reservable: list[str], now_ms: int, rid: str) -> dict[str, Any] | None:
        """The submit body, or None with `errors` filled in."""
        if not self.get("user").strip():
            self.errors["user"] = "the user is required (YARN's user.name)"
        if self.get("queue") not in reservable:
            self.errors["queue"] = "choose one of the reservable queues"
        if self.get("interpreter") not in INTERPRETERS:
            self.errors["interpreter"] = "choose R_ALL, R_ANY, R_ORDER or R_ORDER_NO_GAP"
        arrival = self._int("arrival", 0, "the arrival")
        deadline = self._int("deadline", 1, "the deadline")
        if arrival is not None and deadline is not None and deadline <= arrival:
            self.errors["deadline"] = "the deadline must be after the arrival"
        stages = []
        for i in range(STAGES):
            keys = [f"stage-{i}-{k}" for k, _ in STAGE_FIELDS]
            if not any(self.get(k).strip() for k in keys):
                continue
            nums = [self._int(k, 1, what)
                    for k, (_f, what) in zip(keys, STAGE_FIELDS)]
            if any(n is None for n in nums):
                continue
            mem, vc, n, conc, dur = (int(x) for x in nums if x is not None)
            if conc > n:
                self.errors[f"stage-{i}-concurrency"] = "min concurrency cannot exceed the containers"
                continue
            stages.append({"capability": {"memory": mem, "vCores": vc}, "num-containers": n,
                           "min-concurrency": conc, "duration": dur * MINUTE_MS})
        if not stages and not any(k.startswith("stage-") for k in self.errors):
            self.errors["stage-0-memory"] = "fill in at least one stage"
        if self.errors or arrival is None or deadline is None:
            return None
        return {"queue": self.get("queue"), "reservation-id": rid, "reservation-definition": {
            "arrival": now_ms + arrival * MINUTE_MS, "deadline": now_ms + deadline * MINUTE_MS,
            "reservation-name": self.get("name").strip(),
            "reservation-requests": {"reservation-request-interpreter": INTERPRETERS[self.get("interpreter")],
                                     "reservation-request": stages}}}

    def answer_error(self, message: str) -> None:
        """Put the handler's refusal next to the field it is about (else above the form)."""
        low = message.lower()
        if ("deadline" in low and "past" in low) or "minimum resource duration" in low:
            key = "deadline"
        elif "largest gang" in low:
            key = "stage-0-concurrency"
        elif "queue" in low:
            key = "queue"
        elif "user" in low and "authenticated" in low:
            key = "user"
        else:
            key = "form"
        self.errors[key] = message
