import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apportion.errors import QuantityError
from apportion.quantity import parse_quantity
from apportion.resources import Resource, dominant_share, share


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", 0.5), ("4Gi", 4 * 2**30), ("1e3", 1000.0), ("1.5", 1.5), ("10", 10.0), (".5", 0.5),
     ("1k", 1000.0), ("2Mi", 2 * 2**20), ("100n", 1e-7), (3, 3.0), (2.5, 2.5), ("-1", -1.0), ("1E2", 100.0)],
)
def test_quantities_parse(text, value):
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["NaN", "Inf", "-Inf", "abc", "1.2.3", "", "1Gb", "1 Gi", True, None, [], float("nan"),
                                 float("inf"), "1e999"])
def test_bad_quantities_rejected(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_internal_units_and_admitted_names():
    r = Resource.from_resource_list({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": 3, "rdma": 5,
                                     "count/pods": 4, "hugepages-2Mi": "2Mi"})
    assert r.cpu == 500 and r.memory == 2**30
    assert r.scalars == {"nvidia.com/gpu": 2000, "pods": 3, "hugepages-2Mi": 2 * 2**20 * 1000}
    assert r.to_natural() == {"cpu": 0.5, "memory": 2**30, "nvidia.com/gpu": 2, "pods": 3, "hugepages-2Mi": 2 * 2**20}


def test_negative_quantity_rejected_with_name():
    with pytest.raises(QuantityError, match="cpu"):
        Resource.from_resource_list({"cpu": "-1"})


def test_rule_a_tolerance_and_missing_scalars():
    a = Resource(1000.05, 0, {"pods": 1})
    assert a.less_equal(Resource(1000, 0, {"pods": 1}))  # within 0.1
    assert not Resource(1000.2).less_equal(Resource(1000))
    g = Resource(0, 0, {"nvidia.com/gpu": 1000})
    assert not g.less_equal(Resource(10**6, 10**9))  # missing scalar counts as 0 (Zero)
    assert g.less_equal(Resource(10**6, 10**9), "infinity")
    # scalars only on the right are not looked at
    assert Resource(1).less_equal(Resource(1, 0, {"nvidia.com/gpu": 0}))


def test_rule_b_only_requested_dimensions_strict_pods_skipped():
    used = Resource(5000, 100 * 2**30, {"pods": 50})
    limit = Resource(6000, 10 * 2**30, {"pods": 1})
    req = Resource(1000, 0, {"pods": 1})
    ok, failed = used.less_equal_with_dimension(limit, req)
    assert ok and failed == []  # memory over the limit but not requested; pods skipped
    ok, failed = used.less_equal_with_dimension(limit, Resource(1000, 1, {"pods": 1}))
    assert not ok and failed == ["memory"]
    ok, failed = Resource(6000.05).less_equal_with_dimension(Resource(6000), Resource(1))
    assert not ok  # strict: no tolerance
    ok, failed = Resource(0, 0, {"nvidia.com/gpu": 1000}).less_equal_with_dimension(
        Resource(10**6), Resource(0, 0, {"nvidia.com/gpu": 1000}))
    assert failed == ["nvidia.com/gpu"]  # a requested scalar the limit lacks is a limit of 0
    assert Resource(1).less_equal_with_dimension(None, Resource(1)) == (False, ["cpu"])


def test_rule_c_any_requested_dimension_zero_filtered():
    deserved = Resource(4000, 0, {"nvidia.com/gpu": 2000})
    used = Resource(8000, 0, {"nvidia.com/gpu": 1000, "pods": 9})
    assert used.less_equal_partly_zero_filtered(deserved, Resource(1000, 0, {"nvidia.com/gpu": 1000}))
    assert not used.less_equal_partly_zero_filtered(deserved, Resource(1000))
    # both below 0.1 on the only requested dimension: filtered out -> False
    assert not Resource(0, 0).less_equal_partly_zero_filtered(Resource(0, 0), Resource(0, 1))


def test_rule_d_relevant_dimensions():
    deserved = Resource(0, 0, {"nvidia.com/gpu": 0})
    alloc = Resource(10**6, 10**12, {"nvidia.com/gpu": 1000})
    assert alloc.greater_partly_relevant(deserved, Resource(1000, 0, {"nvidia.com/gpu": 1000}))
    # cpu not relevant: deserved has no cpu
    assert not alloc.greater_partly_relevant(deserved, Resource(1000))
    assert not alloc.greater_partly_relevant(Resource(0, 0), Resource(0, 0, {"nvidia.com/gpu": 1}))


def test_helpers():
    a = Resource(5000, 10, {"x.io/a": 3000})
    b = Resource(2000, 20, {"x.io/a": 5000, "x.io/b": 1})
    assert a.exceeded_part(b) == Resource(3000, 0)
    assert a.exceeded_part(b).scalars == {}
    m = a.clone().min_dimension_resource(Resource(1000, 5), "zero")
    assert m == Resource(1000, 5, {"x.io/a": 0})
    m = a.clone().min_dimension_resource(Resource(1000, 5), "infinity")
    assert m.scalars == {"x.io/a": 3000}
    mx = Resource.max_of(Resource(0, 0, {"x.io/n": -5}), Resource(1, 1))
    assert "x.io/n" not in mx.scalars
    assert share(0, 0) == 0 and share(3, 0) == 1 and share(1, 4) == 0.25
    assert dominant_share(Resource(2000, 0, {"pods": 10}), Resource(8000, 10, {"pods": 20})) == 0.5
    assert Resource(0.05, 0.05, {"pods": 5}).is_empty()
    assert not Resource(0, 0, {"x.io/a": 0.2}).is_empty()
    assert math.isinf(Resource.unlimited_cpu_memory().cpu)


_vals = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(_vals, _vals, _vals, _vals)
def test_exceeded_part_plus_min_is_identity(a1, a2, b1, b2):
    a, b = Resource(a1, a2), Resource(b1, b2)
    back = a.exceeded_part(b).add(Resource.min_of(a, b))
    assert back.cpu == pytest.approx(a.cpu) and back.memory == pytest.approx(a.memory)
