import pytest

from apportion.errors import ConfError
from apportion.framework.conf import default_conf, parse_conf


def test_default_conf_and_switch_defaults():
    c = default_conf()
    assert c.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in c.tiers] == [
        ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"]]
    opt = c.tiers[0].plugins[0]
    assert opt.enabled("enableJobOrder") and opt.enabled("enabledOverused") and opt.enabled("enableJobEnqueued")
    assert not opt.enabled("enableHierarchy") and not opt.enabled("enabledClusterOrder")


def test_unknown_action_is_rejected():
    with pytest.raises(ConfError, match="failed to find action 'alocate'"):
        parse_conf('actions: "enqueue, alocate"')


def test_drf_hierarchy_with_proportion_in_one_tier_conflicts():
    text = 'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n  - name: proportion\n'
    with pytest.raises(ConfError, match="proportion and drf with hierarchy enabled conflicts"):
        parse_conf(text)
    # in different tiers it is accepted, as in Volcano
    parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
               '- plugins:\n  - name: proportion\n')


def test_hierarchy_alias_and_precedence():
    c = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: capacity\n    enabledHierarchy: true\n')
    assert c.hierarchy_enabled("capacity")
    c = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: capacity\n    enabledHierarchy: true\n'
                   '    enableHierarchy: false\n')
    assert not c.hierarchy_enabled("capacity")
    assert any("enableHierarchy wins" in w for w in c.warnings)


def test_unknown_keys_warn_and_switches_parse():
    c = parse_conf('actions: "allocate"\nfoo: 1\ntiers:\n- plugins:\n  - name: gang\n    enableJobRedy: false\n'
                   '    enableJobReady: false\n')
    assert not c.tiers[0].plugins[0].enabled("enableJobReady")
    assert any("enableJobRedy" in w for w in c.warnings) and any("'foo'" in w for w in c.warnings)


def test_configurations_are_action_arguments():
    c = parse_conf('actions: "preempt"\nconfigurations:\n- name: preempt\n  arguments:\n'
                   '    enableTopologyAwarePreemption: true\n')
    assert c.action_arguments("preempt") == {"enableTopologyAwarePreemption": True}


@pytest.mark.parametrize("text", ["actions: [1, 2]", "tiers: 3", "tiers:\n- plugins:\n  - 7", "- a", ": : :"])
def test_malformed_confs_are_input_errors(text):
    with pytest.raises(ConfError):
        parse_conf(text)
