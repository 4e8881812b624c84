"""Which Ray cluster `serve --backend ray` and `sweep` join without --ray-address."""

from __future__ import annotations

from apportion.backends.ray_connect import init_address


def test_no_address_means_a_new_local_ray_not_whichever_ray_runs_on_the_machine() -> None:
    # ray.init(address=None) joins the last Ray started on the machine (another user's, a test
    # cluster's); "local" makes Ray start its own
    assert init_address(None, {}) == "local"
    assert init_address("", {}) == "local"


def test_an_address_given_or_rays_own_variable_is_joined() -> None:
    assert init_address("10.0.0.1:6379", {"RAY_ADDRESS": "10.0.0.2:6379"}) == "10.0.0.1:6379"
    assert init_address(None, {"RAY_ADDRESS": "10.0.0.2:6379"}) == "10.0.0.2:6379"
