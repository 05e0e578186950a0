import time

from harnessfit.train.guard import HealthGuard, Reading, ScriptedReadings, envelope, evaluate_rules
from harnessfit.train.guard_rules import GuardRules

OK = dict(host_mem_avail_gib=20.0, swap_used_gib=0.0, disk_free_gib=100.0)


def test_each_stop_rule_fires_and_only_then():
    rules = GuardRules()
    assert not evaluate_rules(rules, [Reading(**OK, gpu_temp_c=80)]).stop
    one_hot = [Reading(**OK, gpu_temp_c=70), Reading(**OK, gpu_temp_c=85)]
    assert not evaluate_rules(rules, one_hot).stop  # one reading >= 84 is not enough
    two_hot = [Reading(**OK, gpu_temp_c=84), Reading(**OK, gpu_temp_c=86)]
    assert evaluate_rules(rules, two_hot).rule == "gpu_temp"
    assert evaluate_rules(rules, [Reading(**{**OK, "host_mem_avail_gib": 3.9})]).rule == "host_mem"
    assert evaluate_rules(rules, [Reading(**{**OK, "disk_free_gib": 19.5})]).rule == "disk"


def test_envelope_marks_the_closest_rule():
    s = [dict(OK, gpu_temp_c=60.0), dict(OK, gpu_temp_c=82.0, disk_free_gib=90.0)]
    rows = {r["quantity"]: r for r in envelope(s, GuardRules())}
    assert rows["GPU temperature"]["worst"] == 82.0 and rows["GPU temperature"]["avg"] == 71.0
    assert rows["GPU temperature"]["closest"] and not rows["free disk"]["closest"]
    assert rows["free disk"]["worst_kind"] == "min" and rows["free disk"]["worst"] == 90.0


def test_guard_process_samples_and_sets_the_flag(tmp_path):
    src = ScriptedReadings([OK, OK, {**OK, "host_mem_avail_gib": 1.0}])
    with HealthGuard(GuardRules(interval_s=0.05), tmp_path, src) as g:
        deadline = time.monotonic() + 30
        while not g.should_stop() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert g.should_stop()
    assert g.reason().rule == "host_mem" and "1.00 GiB" in g.reason().reason
    lines = (tmp_path / "guard.jsonl").read_text().splitlines()
    assert len(lines) >= 3
