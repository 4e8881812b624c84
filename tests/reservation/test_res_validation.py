"""Validation rules (contract §5.5, §6, §7.1) with YARN's messages, through the REST handlers."""

from __future__ import annotations

import pytest
from res_helpers import C1, body, message, system

from apportion.reservation.validate import ValidationError, validate_definition


def submit(sys_, b, user="bob"):
    return sys_.submit(user, b)


def test_unauthenticated_everywhere():
    s = system()
    for resp in (s.new_reservation(None), s.submit(None, {}), s.update(None, {}), s.delete(None, {}),
                 s.list(None, {})):
        assert resp[0] == 401
        assert message(resp) == "Unable to obtain user name, user not authenticated"


@pytest.mark.parametrize(
    "mutate, status, text",
    [
        (lambda b: b.pop("reservation-definition"), 400, "Input ReservationDefinition should not be null"),
        (lambda b: b["reservation-definition"].pop("reservation-requests"), 400,
         "The ReservationDefinition should contain at least one ReservationRequest"),
        (lambda b: b["reservation-definition"]["reservation-requests"].update({"reservation-request": []}), 400,
         "The ReservationDefinition should contain at least one ReservationRequest"),
        (lambda b: b.update({"reservation-id": "foo_1_2"}), 404, "The specified reservation id is invalid: foo_1_2"),
        (lambda b: b.update({"reservation-id": "reservation_1"}), 404,
         "The specified reservation id is not parseable: reservation_1"),
        (lambda b: b.update({"reservation-id": "reservation_x_1"}), 400, 'For input string: "x"'),
        (lambda b: b.pop("reservation-id"), 400,
         "Reservation id cannot be null. Please try again specifying  a valid reservation id by creating a new "
         "reservation id."),
        (lambda b: b.pop("queue"), 400, "The queue is not specified. Please try again with a valid reservable queue."),
        (lambda b: b.update({"queue": "default"}), 400,
         "The specified queue: default is not managed by reservation system. Please try again with a valid "
         "reservable queue."),
        (lambda b: b["reservation-definition"].update({"deadline": 0}), 400,
         "The specified deadline: 0 is the past. Please try again with deadline in the future."),
    ],
)
def test_submit_errors(mutate, status, text):
    s = system()
    b = body(1, 0, 10_000, [(C1, 1, 1, 1000)])
    mutate(b)
    resp = submit(s, b)
    assert resp[0] == status
    assert message(resp) == text


def test_wrong_types_and_bad_interpreter_are_400_naming_the_field():
    s = system()
    b = body(1, 0, 10_000, [(C1, 1, 1, 1000)])
    b["reservation-definition"]["arrival"] = "soon"
    assert submit(s, b)[0] == 400 and "arrival" in message(submit(s, b))
    b = body(1, 0, 10_000, [(C1, 1, 1, 1000)], interpreter=7)
    assert submit(s, b)[0] == 400 and "reservation-request-interpreter" in message(submit(s, b))
    b = body(1, 0, 10_000, [(C1, 1, 1, 1000)])
    del b["reservation-definition"]["reservation-requests"]["reservation-request"][0]["capability"]
    assert submit(s, b)[0] == 400 and "capability" in message(submit(s, b))
    assert submit(s, "not an object")[0] == 400
    # numeric strings are accepted, as Jersey accepts them
    b = body(1, "0", "10000", [(C1, 1, 1, 1000)])
    assert submit(s, b)[0] == 202


def test_definition_rules_in_order():
    s = system(capacity=(4096, 4))
    p = s.plan
    b = body(1, 0, 3000, [(C1, 1, 1, 2000), (C1, 1, 1, 2000)], interpreter=2)
    assert message(submit(s, b)) == (
        "The time difference (3000) between arrival (0) and deadline (3000) must  be greater or equal to the "
        "minimum resource duration (4000)")
    # R_ANY skips the duration and gang checks
    b = body(2, 0, 3000, [(C1, 1, 1, 5000), (C1, 1, 1, 1000)], interpreter=0)
    assert submit(s, b)[0] == 202
    b = body(3, 0, 10_000, [((2048, 2), 6, 3, 1000)])
    assert message(submit(s, b)) == (
        "The size of the largest gang in the reservation definition (<memory:6144, vCores:6>) exceed the "
        "capacity available (<memory:4096, vCores:4> )")
    for rec, text in [
        ("abc", "Invalid period abc. Please try again with a non-negative long value as period."),
        ("-5", "Negative Period : -5. Please try again with a non-negative long value as period."),
        ("5000", "Duration of the requested reservation: 10000 is greater than the recurrence: 5000. Please try "
                 "again with a smaller duration."),
        ("70000", "The maximum periodicity: 86400000 must be divisible by the recurrence expression provided: "
                  "70000. Please try again with a recurrence expression that satisfies this requirement."),
    ]:
        b = body(4, 0, 10_000, [(C1, 1, 1, 1000)], recurrence=rec)
        assert message(submit(s, b)) == text
    with pytest.raises(ValidationError, match="Missing reservation definition"):
        validate_definition(p, None, 0)


@pytest.mark.parametrize("agent", ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"])
@pytest.mark.parametrize(
    "stage, text",
    [
        ((C1, 2, 0, 1000), "Gang Size should be >= 1"),
        ((C1, 0, 1, 1000), "Num containers should be > 0"),
        ((C1, 3, 2, 1000), "Parallelism must be an exact multiple of gang size"),
        (((16384, 1), 1, 1, 1000), "Individual capability requests should not exceed cluster's maxAlloc"),
    ],
)
def test_stage_rules_are_contract_validation_errors(agent, stage, text):
    s = system(agent, capacity=(100 * 1024, 100))
    resp = submit(s, body(1, 0, 10_000, [stage]))
    assert resp[0] == 400
    assert message(resp) == (
        "org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.ContractValidationException: " + text)


def test_duplicates_update_delete_and_list():
    s = system()
    b = body(1, 0, 10_000, [(C1, 2, 1, 1000)])
    assert submit(s, b)[0] == 202
    assert submit(s, b) == (202, None)  # identical resubmission: no-op
    b2 = body(1, 0, 10_000, [(C1, 3, 1, 1000)])
    assert message(submit(s, b2)).startswith(
        "Reservation allocation already exists with the reservation id reservation_1700000000000_0001")
    assert s.update("bob", {"reservation-definition": b2["reservation-definition"]})[1]["RemoteException"][
        "message"] == "Update operations must specify an existing ReservaitonId"
    unknown = dict(b2, **{"reservation-id": "reservation_1700000000000_0099"})
    assert message(s.update("bob", unknown)) == (
        "The specified reservation with ID: reservation_1700000000000_0099 is unknown. Please try again with a "
        "valid reservation.")
    assert s.update("bob", b2) == (200, {})
    assert message(s.delete("bob", {})) == "Missing reservation id. Please try again by specifying a reservation id."
    assert s.delete("bob", {"reservation-id": str(b["reservation-id"])}) == (200, {})
    again = s.delete("bob", {"reservation-id": str(b["reservation-id"])})
    assert message(again) == "The specified Reservation with ID reservation_1700000000000_0001 does not exist in the plan"
    # an update of a deleted id re-creates it (the id->queue record is never removed)
    assert s.update("bob", b2) == (200, {})
    st, out = s.list("bob", {"queue": "dedicated", "include-resource-allocations": "True"})
    assert st == 200 and len(out["reservations"]) == 1
    info = out["reservations"][0]
    assert info["reservation-id"] == "reservation_1700000000000_0001" and info["user"] == "bob"
    assert info["resource-allocations"]
    assert message(s.list("bob", {})) .startswith("The specified queue: default is not managed")
    assert message(s.list("bob", {"queue": ""})) == "The queue is not specified. Please try again with a valid reservable queue."
    assert message(s.list("bob", {"queue": "root.dedicated", "start-time": "10", "end-time": "5"})) == (
        "The specified end time must be greater than the specified start time.")
    assert s.list("bob", {"queue": "dedicated", "start-time": "x"})[0] == 400
    assert s.list("bob", {"queue": "dedicated", "reservation-id": "reservation_1_7"}) == (200, {"reservations": []})
    assert s.new_reservation("bob") == (200, {"reservation-id": "reservation_1700000000000_0002"})


def test_agent_none():
    s = system("none")
    assert message(submit(s, body(1, 0, 10_000, [(C1, 1, 1, 1000)]))) == (
        "No reservation agent is configured for queue dedicated.")


def test_rule_3_no_stages_checked_by_the_validator_itself():
    """REST conversion answers an empty stage list first; the validator keeps YARN's own message."""
    from res_helpers import definition, make_plan

    with pytest.raises(ValidationError, match="No resources have been specified to reserve. Please try again by "
                                              "specifying the resources to reserve."):
        validate_definition(make_plan(), definition(0, 10_000, []), 0)
