"""`apportion serve --scenario default`: a new database is seeded with the scenario's own cluster, so
the played jobs find the queues they name (before, they waited forever in queues the built-in cluster
does not have)."""

from __future__ import annotations

from apportion.service.reservations import PLAN_KEY, RESERVABLE_KEY, parse_plan_settings
from apportion.service.seed import scenario_cluster, scenario_file
from apportion.simulation.scenario import default_scenario_path, load_scenario


def test_built_in_scenario_name_resolves_to_the_packaged_file() -> None:
    assert scenario_file("default") == str(default_scenario_path())


def test_seed_holds_the_scenarios_nodes_queues_plans_and_conf() -> None:
    objs = [o for _, o in scenario_cluster("default")]
    sc = load_scenario(default_scenario_path())
    queues = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Queue"}
    # the scenario's own queues; `root` and `default` are made by the reader, as Volcano makes them
    assert set(queues) == set(sc.queues) - {"root", "default"}
    assert sum(o["kind"] == "Node" for o in objs) == len(sc.nodes)
    # every queue a played job names exists in the seed
    assert {j.queue for j in sc.jobs} <= set(queues)
    reserved = queues["reserved"]["metadata"]["annotations"]
    assert reserved[RESERVABLE_KEY] == "true"
    settings = parse_plan_settings(reserved[PLAN_KEY], "reserved")
    assert settings.move_on_expiry is True
    (conf,) = [o for o in objs if o["kind"] == "ConfigMap"]
    assert conf["data"]["volcano-scheduler.conf"] == sc.conf_text
