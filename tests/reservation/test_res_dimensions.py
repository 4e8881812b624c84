"""A plan of more than YARN's two resource types: GPUs (and any extended type) are planned like
memory and vCores, and a plan whose extra type never binds places exactly as a two-type plan does."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import body, message, rid
from res_invariants import check_load_is_sum, check_plan_within_capacity

from apportion.reservation.agents import make_agent
from apportion.reservation.definition import parse_definition
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy, NoOverCommitPolicy
from apportion.reservation.resmath import Calculator, fmt_res
from apportion.reservation.store import InMemoryPlanStore
from apportion.reservation.system import ReservationSystem

AGENTS = ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"]
GPU_DIMS = ("memory-mb", "vcores", "nvidia.com/gpu")


def gpu_system(agent: str, capacity=(10 * 1024, 10, 2), calc: str = "default", policy=None,
               store: InMemoryPlanStore | None = None, **kw) -> ReservationSystem:
    plan = InMemoryPlan("dedicated", capacity, step=1000, calculator=Calculator(calc),
                        policy=policy or NoOverCommitPolicy(), dims=GPU_DIMS, **kw)
    return ReservationSystem.single(plan, make_agent(agent), store=store)


def gpu_body(n: int, arrival: int, deadline: int, stages, interpreter: int = 1, recurrence: str | None = None):
    """A submission whose stages are ((memory, vCores, gpus), containers, gang, duration)."""
    b = body(n, arrival, deadline, [((c[0], c[1]), k, g, d) for c, k, g, d in stages], interpreter,
             recurrence=recurrence)
    for req, (c, _k, _g, _d) in zip(b["reservation-definition"]["reservation-requests"]["reservation-request"],
                                     stages):
        req["capability"]["resourceInformations"] = {
            "resourceInformation": [{"name": "yarn.io/gpu", "value": c[2], "units": ""}]}
    return b


@pytest.mark.parametrize("agent", AGENTS)
def test_a_gpu_shortage_alone_refuses_a_booking_memory_and_cpu_would_allow(agent):
    s = gpu_system(agent)
    # 2 GPUs for the whole window: the plan's every GPU
    assert s.submit("alice", gpu_body(1, 0, 10_000, [((1024, 1, 2), 1, 1, 10_000)]))[0] == 202
    # memory and vCores are nearly all free, but no GPU is left
    status, resp = s.submit("bob", gpu_body(2, 0, 10_000, [((1024, 1, 1), 1, 1, 5_000)]))
    assert status == 400, resp
    assert s.plan.get(rid(2)) is None
    # the same booking without a GPU fits
    assert s.submit("bob", gpu_body(3, 0, 10_000, [((1024, 1, 0), 1, 1, 5_000)]))[0] == 202
    # and once the GPUs are free again (the first booking deleted) the GPU booking fits too
    assert s.delete("alice", {"reservation-id": str(rid(1))})[0] == 200
    assert s.submit("bob", gpu_body(2, 0, 10_000, [((1024, 1, 1), 1, 1, 5_000)]))[0] == 202
    check_plan_within_capacity(s.plan)
    check_load_is_sum(s.plan)


@pytest.mark.parametrize("calc", ["default", "dominant"])
def test_a_gpu_gang_is_placed_where_the_gpus_are_free(calc):
    s = gpu_system("aligned-left", calc=calc)
    # one GPU is taken on [0, 5 s)
    assert s.submit("alice", gpu_body(1, 0, 5_000, [((1024, 1, 1), 1, 1, 5_000)]))[0] == 202
    # a gang of 2 GPUs for 3 s inside [0, 10 s): only [5 s, 10 s) has both
    assert s.submit("bob", gpu_body(2, 0, 10_000, [((1024, 1, 1), 2, 2, 3_000)]))[0] == 202
    pieces = s.plan.get(rid(2)).rle.nonzero_pieces()
    assert all(a >= 5_000 for a, _b, _r in pieces)
    assert all(r[2] == 2 for _a, _b, r in pieces)


def test_the_rest_edge_reads_and_lists_yarn_resource_informations():
    s = gpu_system("greedy")
    assert s.submit("alice", gpu_body(1, 0, 10_000, [((2048, 2, 1), 1, 1, 4_000)]))[0] == 202
    status, resp = s.list("alice", {"queue": "dedicated", "include-resource-allocations": "true"})
    assert status == 200
    info = resp["reservations"][0]
    # greedy starts the reservation at the arrival with a zero piece: the last piece is the placed one
    alloc = info["resource-allocations"][-1]["resource"]
    assert (alloc["memory"], alloc["vCores"]) == (2048, 2)
    assert alloc["resourceInformations"]["resourceInformation"] == [
        {"name": "memory-mb", "value": 2048, "units": "Mi"},
        {"name": "vcores", "value": 2, "units": ""},
        {"name": "yarn.io/gpu", "value": 1, "units": ""},
    ]
    cap = info["reservation-definition"]["reservation-requests"]["reservation-request"][0]["capability"]
    # what the list reports parses back to the same definition
    d = parse_definition(info["reservation-definition"], dims=GPU_DIMS)
    assert d == s.plan.get(rid(1)).definition
    assert cap["resourceInformations"]["resourceInformation"][2] == {"name": "yarn.io/gpu", "value": 1, "units": ""}


def test_a_resource_type_the_plan_lacks_is_refused_naming_the_field():
    two = ReservationSystem.single(InMemoryPlan("dedicated", (10240, 10), policy=NoOverCommitPolicy()),
                                   make_agent("greedy"))
    status, resp = two.submit("alice", gpu_body(1, 0, 10_000, [((1024, 1, 1), 1, 1, 1_000)]))
    assert status == 400
    assert "capability.resourceInformations.resourceInformation[0].name" in message((status, resp))
    assert "yarn.io/gpu" in message((status, resp))
    # a zero of an unknown type asks for nothing of it: accepted
    assert two.submit("alice", gpu_body(2, 0, 10_000, [((1024, 1, 0), 1, 1, 1_000)]))[0] == 202
    # a bad unit and a negative GPU count are refused
    b = gpu_body(3, 0, 10_000, [((1024, 1, 1), 1, 1, 1_000)])
    b["reservation-definition"]["reservation-requests"]["reservation-request"][0]["capability"][
        "resourceInformations"]["resourceInformation"][0]["units"] = "Gi"
    s = gpu_system("greedy")
    assert "units" in message(s.submit("alice", b))
    status, resp = s.submit("alice", gpu_body(4, 0, 10_000, [((1024, 1, -1), 1, 1, 1_000)]))
    assert status == 400 and "negative" in message((status, resp))


def test_memory_and_vcores_in_resource_informations_set_them_as_yarn_does():
    d = parse_definition({"arrival": 0, "deadline": 10, "reservation-requests": {"reservation-request": [{
        "capability": {"memory": 1, "vCores": 1, "resourceInformations": {"resourceInformation": {
            "name": "memory-mb", "value": 4096, "units": "Mi"}}},
        "num-containers": 1, "min-concurrency": 1, "duration": 5}]}}, dims=GPU_DIMS)
    assert d.stages[0].capability == (4096, 1, 0)


def test_the_dominant_calculator_compares_every_type_by_its_share():
    calc = Calculator("dominant")
    ref = (100, 10, 4)
    # shares (0.1, 0.1, 0.5) against (0.5, 0.1, 0.25): the largest tie at 0.5, the next decides
    assert calc.compare((10, 1, 2), (50, 1, 1), ref) == -1
    assert calc.compare((50, 1, 1), (10, 1, 2), ref) == 1
    # a GPU share decides where memory and vCores tie
    assert calc.compare((10, 1, 1), (10, 1, 0), ref) == 1
    # with a type of zero capacity only a component-wise dominance orders two resources
    assert calc.compare((10, 1, 0), (5, 2, 0), (100, 10, 0)) == 0
    assert calc.compare((10, 2, 0), (5, 2, 0), (100, 10, 0)) == 1
    assert calc.ratio((50, 1, 3), ref) == 0.75
    assert calc.gangs((100, 10, 3), (10, 1, 2), 99) == 1
    assert fmt_res((1024, 2, 1), GPU_DIMS) == "<memory:1024, vCores:2, nvidia.com/gpu: 1>"


def test_the_plan_refuses_a_capacity_of_other_dimensions():
    with pytest.raises(ValueError, match="dimensions"):
        InMemoryPlan("q", (1, 2), policy=NoOverCommitPolicy(), dims=GPU_DIMS)
    with pytest.raises(ValueError, match="distinct"):
        InMemoryPlan("q", (1, 2, 3), policy=NoOverCommitPolicy(), dims=("memory-mb", "vcores", "vcores"))
    plan = InMemoryPlan("q", (1, 2, 3), policy=NoOverCommitPolicy(), dims=GPU_DIMS)
    with pytest.raises(ValueError, match="dimensions"):
        plan.set_capacity((1, 2))


# -- a third type that never binds: the same placements as the two-type plan ----------------------

stage = st.tuples(
    st.sampled_from([(1024, 1), (2048, 1), (1024, 2), (3072, 2)]),
    st.integers(1, 3),  # gangs
    st.integers(1, 2),  # gang size
    st.integers(1, 6).map(lambda k: k * 500),
)
job = st.tuples(
    st.integers(0, 20).map(lambda k: k * 700),
    st.integers(2, 30).map(lambda k: k * 900),
    st.lists(stage, min_size=1, max_size=3),
    st.integers(0, 3),
    st.sampled_from([None, None, "30000", "60000"]),
)
ops = st.lists(st.tuples(st.sampled_from(["submit", "submit", "update", "delete"]), st.integers(1, 5), job),
               min_size=1, max_size=8)


def _answers(s: ReservationSystem, ops, gpus: int | None) -> list:
    out = []
    for op, n, (arrival, length, stages, interp, rec) in ops:
        st_ = [(c if gpus is None else (*c, gpus), g * k, k, d) for c, g, k, d in stages]
        b = (body if gpus is None else gpu_body)(n, arrival, arrival + length, st_, interp, recurrence=rec)
        if op == "submit":
            out.append(s.submit("bob", b))
        elif op == "update":
            out.append(s.update("bob", b))
        else:
            out.append(s.delete("bob", {"reservation-id": str(rid(n))}))
    return out


def _two_of_pieces(pieces):
    """Memory and vCores of a three-type allocation, as the two-type plan keeps them: adjacent pieces
    that differ only in GPUs are one piece there."""
    out: list = []
    for a, b, v in pieces:
        if out and out[-1][1] == a and out[-1][2] == v[:2]:
            out[-1] = (out[-1][0], b, v[:2])
        else:
            out.append((a, b, v[:2]))
    return out


def _two_of_points(points):
    """Memory and vCores of a three-type step function's breakpoints, as the two-type plan keeps them:
    a breakpoint where only the GPUs change is none there."""
    out: list = []
    for t, v in points:
        if not out or out[-1][1] != v[:2]:
            out.append((t, v[:2]))
    return out


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("calc,gpus", [("default", 0), ("dominant", 0), ("default", 1)])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_a_type_that_never_binds_changes_no_placement(agent, calc, gpus, ops):
    """The vector paths (any length) against the two-component ones (and their numpy fast paths):
    GPUs never asked for, or (default calculator, which orders by memory) plenty of them, give the
    same answers and the same allocations as the plan without GPUs."""
    def policy():
        return CapacityOverTimePolicy(1.0, 0.8, 120_000)

    two = ReservationSystem.single(
        InMemoryPlan("dedicated", (8192, 6), step=1000, calculator=Calculator(calc), policy=policy(),
                     max_periodicity=60_000), make_agent(agent))
    three = gpu_system(agent, capacity=(8192, 6, 1000), calc=calc, policy=policy(), max_periodicity=60_000)
    # the statuses agree (an update of an unknown id is refused for another reason first: the GPU
    # type its body names is parsed before the id is looked up, and the two-type plan has none)
    assert [a[0] for a in _answers(three, ops, gpus)] == [a[0] for a in _answers(two, ops, None)]
    for r2 in two.plan.reservations.values():
        r3 = three.plan.get(r2.id)
        assert r3 is not None
        assert _two_of_pieces(r3.intervals) == r2.intervals
        assert (r3.start, r3.end, r3.period, r3.acceptance_time) == (r2.start, r2.end, r2.period, r2.acceptance_time)
    assert set(three.plan.reservations) == set(two.plan.reservations)
    assert _two_of_points(three.plan.load.breakpoints()) == two.plan.load.breakpoints()
    check_plan_within_capacity(three.plan)
    check_load_is_sum(three.plan)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, gpus=st.integers(0, 2))
def test_a_gpu_plan_recovers_from_its_store_with_identical_allocations(ops, gpus):
    store = InMemoryPlanStore()
    s = gpu_system("aligned-left", capacity=(8192, 6, 4), store=store, max_periodicity=60_000)
    _answers(s, ops, gpus)
    again = gpu_system("aligned-left", capacity=(8192, 6, 4), store=InMemoryPlanStore(), max_periodicity=60_000)
    again.store = store
    again.plan.store = store
    again.recover()
    assert {k: (r.intervals, r.acceptance_time) for k, r in again.plan.reservations.items()} == {
        k: (r.intervals, r.acceptance_time) for k, r in s.plan.reservations.items()}
    assert again.plan.load == s.plan.load
    assert again.plan.periodic_load == s.plan.periodic_load
