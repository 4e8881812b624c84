"""`apportion plan replay`: run a CASE.json against a fresh reservation system (the contract).

`load_case` checks the file's shape (InputError naming file, step index and key: exit status 2);
`Replay.run` executes the steps and returns one observation per step. Failures in YARN's terms
(400 answers, refused allocations, query errors) are observations, not command failures.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apportion.errors import MAX_DEPTH, InputError, check_depth, shown
from apportion.reservation.agents import AGENT_NAMES, make_agent
from apportion.reservation.api import res_json
from apportion.reservation.definition import BadRequest, ReservationId, parse_definition
from apportion.reservation.exceptions import PlanIllegalArgument, PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import make_policy
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.resmath import Calculator, Res, f32_str
from apportion.reservation.system import ReservationSystem

Obs = dict[str, Any]

_MISSING = object()


class _Keys:
    """Typed access to one JSON object, raising InputError that names where the key is."""

    def __init__(self, obj: Any, where: str) -> None:
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", where=where)
        self.obj = obj
        self.where = where

    def _raw(self, key: str, required: bool, default: Any) -> Any:
        if key not in self.obj:
            if required:
                raise InputError(f"missing required key {shown(key)}", where=self.where)
            return default
        return self.obj[key]

    def bad(self, key: str, what: str) -> InputError:
        return InputError(f"key {shown(key)}: {what}", where=self.where)

    def get_int(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        v = self._raw(key, default is _MISSING, default)
        if v is None and nullable:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.bad(key, f"expected an integer, got {json.dumps(v)}")
        return v

    def get_num(self, key: str, default: Any = _MISSING) -> float:
        v = self._raw(key, default is _MISSING, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.bad(key, f"expected a number, got {json.dumps(v)}")
        return float(v)

    def get_str(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        v = self._raw(key, default is _MISSING, default)
        if v is None and nullable:
            return None
        if not isinstance(v, str):
            raise self.bad(key, f"expected a string, got {json.dumps(v)}")
        return v

    def get_bool(self, key: str, default: Any = _MISSING) -> bool:
        v = self._raw(key, default is _MISSING, default)
        if not isinstance(v, bool):
            raise self.bad(key, f"expected true or false, got {json.dumps(v)}")
        return v

    def get_res(self, key: str, default: Any = _MISSING) -> Res:
        v = self._raw(key, default is _MISSING, default)
        if isinstance(v, tuple):
            return v
        k = _Keys(v, f"{self.where}.{key}")
        return (k.get_int("memory"), k.get_int("vCores"))

    def get_any(self, key: str, default: Any = _MISSING) -> Any:
        return self._raw(key, default is _MISSING, default)


def _rid(k: _Keys, key: str) -> ReservationId:
    text = k.get_str(key)
    try:
        return ReservationId.parse(text)
    except BadRequest as e:
        raise k.bad(key, e.message) from None


def _points(k: _Keys, key: str) -> list[int]:
    v = k.get_any(key)
    if not isinstance(v, list):
        raise k.bad(key, "expected a list of times")
    out = []
    for i, p in enumerate(v):
        t = p[0] if isinstance(p, list) and p else p
        if isinstance(t, bool) or not isinstance(t, int):
            raise k.bad(key, f"entry {i}: expected a time or [time, ...]")
        out.append(t)
    return out


def _intervals(k: _Keys, key: str) -> list[tuple[int, int, Res]]:
    v = k.get_any(key)
    if not isinstance(v, list):
        raise k.bad(key, "expected a list of {start, end, resource}")
    out = []
    for i, iv in enumerate(v):
        ik = _Keys(iv, f"{k.where}.{key}[{i}]")
        out.append((ik.get_int("start"), ik.get_int("end"), ik.get_res("resource")))
    return out


class Replay:
    """One replay: a fresh system built from `plan`, and the step runner."""

    def __init__(self, plan_obj: Any, where: str) -> None:
        k = _Keys(plan_obj, where)
        queue = k.get_str("queue")
        if not queue:
            raise k.bad("queue", "must not be empty")
        capacity = k.get_res("capacity")
        step = k.get_int("step", 1000)
        if step <= 0:
            raise k.bad("step", "must be positive")
        calc_name = k.get_str("resourceCalculator", "default")
        if calc_name not in ("default", "dominant"):
            raise k.bad("resourceCalculator", 'expected "default" or "dominant"')
        agent_name = k.get_str("agent", "aligned-left")
        if agent_name not in AGENT_NAMES:
            raise k.bad("agent", f"unknown agent {shown(agent_name)} (expected one of {', '.join(AGENT_NAMES)})")
        smooth = k.get_int("smoothnessFactor", 10)
        policy = self._policy(k, "policy")
        rep = k.get_any("replanner", {"type": "SimpleCapacityReplanner", "enforcementWindow": 3_600_000})
        replanner = None
        if rep is not None:
            rk = _Keys(rep, f"{where}.replanner")
            if rk.get_str("type", "SimpleCapacityReplanner") != "SimpleCapacityReplanner":
                raise rk.bad("type", 'expected "SimpleCapacityReplanner"')
            replanner = SimpleCapacityReplanner(rk.get_int("enforcementWindow", 3_600_000))
        max_per = k.get_int("maxPeriodicity", 86_400_000)
        if max_per <= 0:
            raise k.bad("maxPeriodicity", "must be positive")
        cluster = None
        if k.get_any("cluster", None) is not None:
            ck = _Keys(k.obj["cluster"], f"{where}.cluster")
            cluster = (ck.get_res("resource"), ck.get_num("planQueueAbsoluteCapacity"))
        self.plan = InMemoryPlan(
            queue,
            capacity,
            step=step,
            calculator=Calculator(calc_name),
            minimum_allocation=k.get_res("minimumAllocation", (1024, 1)),
            maximum_allocation=k.get_res("maximumAllocation", (8192, 4)),
            policy=policy,
            max_periodicity=max_per,
            now=k.get_int("now", 0),
            move_on_expiry=k.get_bool("moveOnExpiry", True),
        )
        self.system = ReservationSystem.single(self.plan, make_agent(agent_name, smooth), replanner, cluster)
        self.entry = self.system.plans[self.plan.queue]
        self.agent_name = agent_name

    @staticmethod
    def _policy(k: _Keys, key: str) -> Any:
        spec = k.get_any(key, None)
        if spec is not None and not isinstance(spec, dict):
            raise k.bad(key, "expected an object")
        try:
            return make_policy(spec)
        except ValueError as e:
            raise k.bad(key, str(e)) from None

    # -- steps --------------------------------------------------------------------------------
    def run_step(self, step: Any, where: str) -> Obs:
        """Run one step and return its observation (contract §3)."""
        k = _Keys(step, where)
        op = k.get_str("op")
        handler: Callable[[_Keys], Obs] | None = getattr(self, "_op_" + op, None) if op.isidentifier() else None
        if handler is None:
            raise k.bad("op", f"unknown op {shown(op)}")
        obs: Obs = {"op": op}
        obs.update(handler(k))
        return obs

    def view(self, rid: ReservationId | None) -> Obs:
        """The reservation view of contract §3.1."""
        r = self.plan.get(rid)
        if r is None:
            return {"exists": False}
        return {"exists": True, "start": r.start, "end": r.end, "period": r.period, "allocations": view_pieces(r)}

    def _body_view(self, body: Any) -> Obs:
        rid = None
        if isinstance(body, dict) and isinstance(body.get("reservation-id"), str):
            try:
                rid = ReservationId.parse(body["reservation-id"])
            except BadRequest:
                rid = None
        return self.view(rid)

    def _user(self, k: _Keys) -> str | None:
        return k.get_str("user", nullable=True)

    def _op_newReservation(self, k: _Keys) -> Obs:
        status, body = self.system.new_reservation(self._user(k))
        return {"status": status, "body": body}

    def _op_submit(self, k: _Keys) -> Obs:
        body = k.get_any("body", None)
        status, out = self.system.submit(self._user(k), body)
        return {"status": status, "body": out, **self._body_view(body)}

    def _op_update(self, k: _Keys) -> Obs:
        body = k.get_any("body", None)
        status, out = self.system.update(self._user(k), body)
        return {"status": status, "body": out, **self._body_view(body)}

    def _op_delete(self, k: _Keys) -> Obs:
        body = k.get_any("body", None)
        status, out = self.system.delete(self._user(k), body)
        return {"status": status, "body": out, **self._body_view(body)}

    def _op_list(self, k: _Keys) -> Obs:
        q = k.get_any("query", {})
        if q is None:
            q = {}
        if not isinstance(q, dict):
            raise k.bad("query", "expected an object of query parameters")
        query = {}
        for name, v in q.items():
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise k.bad("query", f"parameter {name!r}: expected a string")
            query[name] = str(v)
        status, out = self.system.list(self._user(k), query)
        return {"status": status, "body": out}

    def _allocation(self, k: _Keys) -> ReservationAllocation:
        rid = _rid(k, "reservationId")
        d = k.get_any("definition", None)
        definition = None
        if d is not None:
            try:
                definition = parse_definition(d, "definition")
            except BadRequest as e:
                raise InputError(e.message, where=k.where) from None
        rec = k.get_str("recurrence", "0")
        if definition is not None and "recurrence-expression" in d:
            rec = definition.recurrence
        try:
            period = int(rec)
        except ValueError:
            raise k.bad("recurrence", f"not a period in ms: {shown(rec)}") from None
        if period < 0:
            raise k.bad("recurrence", "must not be negative")
        return ReservationAllocation(
            id=rid,
            user=self._user(k),
            definition=definition,
            start=k.get_int("startTime"),
            end=k.get_int("endTime"),
            intervals=_intervals(k, "allocations"),
            period=period,
            gang=k.get_bool("gang", False),
        )

    @staticmethod
    def _plan_call(fn: Callable[[], bool]) -> Obs:
        try:
            ok = fn()
        except PlanningException as e:
            return {"accepted": False, "error": e.kind, "message": e.message}
        except PlanIllegalArgument as e:
            return {"accepted": False, "error": e.kind, "message": e.message}
        return {"accepted": bool(ok)}

    def _op_addAllocation(self, k: _Keys) -> Obs:
        res = self._allocation(k)
        return self._plan_call(lambda: self.plan.add_reservation(res))

    def _op_updateAllocation(self, k: _Keys) -> Obs:
        res = self._allocation(k)
        return self._plan_call(lambda: self.plan.update_reservation(res))

    def _op_deleteAllocation(self, k: _Keys) -> Obs:
        rid = _rid(k, "reservationId")
        return self._plan_call(lambda: self.plan.delete_reservation(rid))

    def _op_advanceTime(self, k: _Keys) -> Obs:
        self.plan.now = k.get_int("to")
        return {"now": self.plan.now}

    def _op_setCapacity(self, k: _Keys) -> Obs:
        self.plan.set_capacity(k.get_res("capacity"))
        return {}

    def _op_setPolicy(self, k: _Keys) -> Obs:
        if k.get_any("policy", None) is None:
            raise k.bad("policy", "missing or null")
        self.plan.policy = self._policy(k, "policy")
        return {}

    def _op_archive(self, k: _Keys) -> Obs:
        tick = k.get_int("tick")
        w = k.get_int("validWindow", None, nullable=True)
        gone = self.plan.archive_completed(tick, w)
        return {"archived": sorted(str(r) for r in gone)}

    def _op_replan(self, k: _Keys) -> Obs:
        removed: list[ReservationId] = []
        if self.entry.replanner is not None:
            removed = self.entry.replanner.plan(self.plan)
        return {"removed": [str(r) for r in removed], "remaining": sorted(str(r) for r in self.plan.reservations)}

    def _op_assertPlan(self, k: _Keys) -> Obs:
        ids = sorted(str(r) for r in self.plan.reservations)
        return {"reservationCount": len(ids), "reservationIds": ids, "lastEndTime": self.plan.last_end_time()}

    def _op_assertCommitted(self, k: _Keys) -> Obs:
        return {"points": [[t, res_json(self.plan.total_at(t))] for t in _points(k, "points")]}

    def _op_assertUserConsumption(self, k: _Keys) -> Obs:
        user = k.get_str("user")
        k.get_int("start", 0)
        k.get_int("end", 0)
        return {"points": [[t, res_json(self.plan.user_at(user, t))] for t in _points(k, "points")]}

    def _op_assertAvailable(self, k: _Keys) -> Obs:
        user = k.get_str("user", nullable=True)
        s, e = k.get_int("start"), k.get_int("end")
        period = k.get_int("period", 0)
        try:
            f = self.plan.available(user, None, s, e, period)
        except PlanningException as ex:
            return {"error": "Planning", "message": ex.message}
        steps: list[list[Any]] = []
        for a, _b, r in f.pieces(s, e):
            if not steps or steps[-1][1] != res_json(r):
                steps.append([a, res_json(r)])
        return {"steps": steps}

    def _op_assertReservation(self, k: _Keys) -> Obs:
        text = k.get_str("reservationId")
        try:
            rid = ReservationId.parse(text)
        except BadRequest:
            return {"exists": False}
        return self.view(rid)

    def _op_getReservations(self, k: _Keys) -> Obs:
        rid_s = k.get_str("reservationId", None, nullable=True)
        rid = None
        if rid_s is not None:
            try:
                rid = ReservationId.parse(rid_s)
            except BadRequest as e:
                raise k.bad("reservationId", e.message) from None
        iv = k.get_any("interval", None)
        interval = None
        if iv is not None:
            if (not isinstance(iv, list) or len(iv) != 2
                    or any(isinstance(x, bool) or not isinstance(x, int) for x in iv)):
                raise k.bad("interval", "expected [start, end] or null")
            interval = (iv[0], iv[1])
        user = k.get_str("user", None, nullable=True)
        found = self.plan.get_reservations(rid, interval, user)
        return {"ids": sorted(str(r.id) for r in found)}

    def _op_planFollower(self, k: _Keys) -> Obs:
        state = self.entry.follower.step(self.plan.now)
        return {
            "queues": {
                name: {"capacity": _f(q.capacity), "maxCapacity": _f(q.max_capacity), "apps": len(q.apps)}
                for name, q in state.queues.items()
            },
            "planCapacity": res_json(state.plan_capacity),
        }

    def _op_submitApp(self, k: _Keys) -> Obs:
        app = k.get_str("appId")
        if "user" in k.obj:
            self._user(k)
        queue = k.get_str("queue")
        if self.entry.follower.submit_app(app, queue):
            return {"accepted": True, "queue": queue}
        return {
            "accepted": False,
            "queue": None,
            "message": f"Application {app} submitted to a reservation which is not currently active: {queue}",
        }

    def _op_appFinished(self, k: _Keys) -> Obs:
        return {"found": self.entry.follower.app_finished(k.get_str("appId"))}


def _f(x: float) -> float:
    """A single-precision capacity as the shortest decimal that YARN would print."""
    return float(f32_str(x).replace("E", "e"))


def view_pieces(r: ReservationAllocation) -> list[dict[str, Any]]:
    """Maximal constant non-zero pieces (clipped to [start, end) when not periodic)."""
    out: list[dict[str, Any]] = []
    for a, b, v in r.rle.nonzero_pieces():
        if r.period <= 0:
            a, b = max(a, r.start), min(b, r.end)
            if a >= b:
                continue
        if out and out[-1]["end"] == a and out[-1]["resource"] == res_json(v):
            out[-1]["end"] = b
            continue
        out.append({"start": a, "end": b, "resource": res_json(v)})
    return out


#: longest integer a case may write (Python refuses to convert more than 4300 digits; no field of a
#: case means anything near 100).
MAX_INT_DIGITS = 100


def _bounded_int(digits: str, path: str) -> int:
    if len(digits) > MAX_INT_DIGITS:
        raise InputError(f"an integer of {len(digits)} digits is too long (at most {MAX_INT_DIGITS})", where=path)
    return int(digits)


def load_case(path: str) -> tuple[Any, list[Any]]:
    """Read CASE.json; InputError when the file or its top-level shape is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read the file: {e.strerror or e}", where=path) from None
    except UnicodeDecodeError:
        raise InputError("the file is not UTF-8 text", where=path) from None
    try:
        doc = json.loads(text, parse_int=lambda digits: _bounded_int(digits, path))
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", where=path) from None
    except RecursionError:
        raise InputError(f"invalid JSON: nested more than {MAX_DEPTH} levels deep", where=path) from None
    check_depth(doc, path)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object with keys 'plan' and 'steps'", where=path)
    if "plan" not in doc:
        raise InputError("missing required key 'plan'", where=path)
    if "steps" not in doc:
        raise InputError("missing required key 'steps'", where=path)
    if not isinstance(doc["steps"], list):
        raise InputError("key 'steps': expected a list", where=path)
    return doc["plan"], doc["steps"]


def run_case(path: str, after_step: Callable[[Replay, int, Any, Obs], None] | None = None) -> tuple[Replay, list[Obs]]:
    """Build the system and run every step; the observations, in step order.

    `after_step(replay, index, step, observation)` runs after each step (the readable report uses
    it to draw timelines of the plan as it is at that moment)."""
    plan_obj, steps = load_case(path)
    replay = Replay(plan_obj, f"{path}: plan")
    # output is printed only after the last step, so a bad step never leaves partial output
    observations = []
    for i, st in enumerate(steps):
        obs = replay.run_step(st, f"{path}: steps[{i}]")
        observations.append(obs)
        if after_step is not None:
            after_step(replay, i, st, obs)
    return replay, observations
