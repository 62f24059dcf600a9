"""rank(policy="auto") follows the verdict measured on the call's GPUs (issue 16, part 1).

The main benchmark's winner.json and each robustness setting's record the
setting they were measured on; a call never runs a verdict of other GPUs, and
``explain`` says which verdict was followed and why.
"""

import pytest

from sched import RankInputError, rank

from .test_rank import NOW, conf, static_queue, winner, write_json


def setting(machines, load=0.85, speeds=None):
    return {"machines": machines, "speeds": speeds, "load": load}


def verdict(tmp_path, name, policy, rule, atc_k=None, where=None):
    """Write a winner.json under the main benchmark (name None) or a setting folder."""
    d = tmp_path if name is None else tmp_path / "robustness" / name
    d.mkdir(parents=True, exist_ok=True)
    w = winner(policy, rule=rule, atc_k=atc_k)
    if where is not None:
        w["setting"] = where
    write_json(d / "winner.json", w)


@pytest.fixture
def queue():
    return static_queue(seed=5, n=40)


def orders(tasks, c, machines):
    return {r: rank(tasks, now=NOW, policy=r, machines=machines, config=c) for r in ("wmdd", "edd", "atc")}


def test_auto_runs_the_winner_measured_on_the_calls_gpus(tmp_path, queue):
    c = conf(tmp_path)
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    verdict(tmp_path, "machines-4", "edd", "edd", where=setting(4))
    for m, rule in ((1, "wmdd"), (4, "edd")):
        by = orders(queue, c, m)
        assert by["wmdd"] != by["edd"]
        assert rank(queue, now=NOW, machines=m, config=c) == by[rule]
        table = rank(queue, now=NOW, machines=m, explain=True, config=c)
        assert set(table.policy) == {rule}
        why = table.why.iloc[0]
        assert f"{m} GPU" in why and ("main benchmark" if m == 1 else "machines-4") in why
    # 2 GPUs: no verdict for them, so neither winner runs: ATC with config rules.atc_k
    table = rank(queue, now=NOW, machines=2, explain=True, config=c)
    assert set(table.policy) == {"atc"} and "no benchmark or tuning for 2 GPUs" in table.why.iloc[0]
    assert table.id.tolist() == orders(queue, c, 2)["atc"]


def test_without_a_winner_for_the_gpus_the_k_tuned_for_them_is_used(tmp_path, queue):
    c = conf(tmp_path)
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    d = tmp_path / "robustness" / "machines-2"
    d.mkdir(parents=True)
    write_json(d / "tuned.json", {"atc_k": 0.3, "setting": setting(2)})
    table = rank(queue, now=NOW, machines=2, explain=True, config=c)
    assert set(table.policy) == {"atc-tuned"} and set(table.atc_k) == {0.3}
    assert "machines-2" in table.why.iloc[0]
    want = rank(queue, now=NOW, policy="atc", machines=2, config=conf(tmp_path, atc_k=0.3))
    assert table.id.tolist() == want
    assert rank(queue, now=NOW, policy="atc-tuned", machines=2, config=c) == want
    # atc-tuned for GPUs nobody tuned for is refused, naming them
    with pytest.raises(RankInputError, match="no tuned k for 3 GPUs"):
        rank(queue, now=NOW, policy="atc-tuned", machines=3, config=c)


def test_of_several_verdicts_for_the_gpus_the_closest_load_wins(tmp_path, queue):
    c = conf(tmp_path)  # scenario.load: 0.85 by default
    verdict(tmp_path, "load-0.70", "wmdd", "wmdd", where=setting(1, load=0.70))
    verdict(tmp_path, "load-0.90", "edd", "edd", where=setting(1, load=0.90))
    by = orders(queue, c, 1)
    assert rank(queue, now=NOW, config=c) == by["edd"]
    assert "load-0.90" in rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1, load=0.85))  # the main one, at 0.85
    assert rank(queue, now=NOW, config=c) == by["wmdd"]


def test_speeds_are_part_of_the_gpus(tmp_path, queue):
    c = conf(tmp_path)
    verdict(tmp_path, "mixed-2", "edd", "edd", where=setting(2, speeds=[1.0, 0.6]))
    # two identical GPUs are not the mixed farm: its winner does not run
    assert set(rank(queue, now=NOW, machines=2, explain=True, config=c).policy) == {"atc"}
    # the mixed farm, in any order and form, is: a spec, a list of {"speed": ...}
    for farm in ("1x0.6,1x1.0", [{"speed": 1.0}, {"speed": 0.6}]):
        table = rank(queue, now=NOW, machines=farm, explain=True, config=c)
        assert set(table.policy) == {"edd"} and "speeds 0.6, 1" in table.why.iloc[0]
    # a mixed farm the benchmark did not measure: ATC
    assert set(rank(queue, now=NOW, machines="1x1.0,1x0.5", explain=True, config=c).policy) == {"atc"}


def test_a_winner_without_a_setting_is_the_configs_scenario(tmp_path, queue):
    c = conf(tmp_path)
    write_json(tmp_path / "winner.json", winner("edd", rule="edd"))  # an earlier version's file
    assert set(rank(queue, now=NOW, explain=True, config=c).policy) == {"edd"}
    assert set(rank(queue, now=NOW, machines=4, explain=True, config=c).policy) == {"atc"}
    cfg4 = dict(c, scenario={"machines": 4})
    assert set(rank(queue, now=NOW, machines=4, explain=True, config=cfg4).policy) == {"edd"}


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"machines": 0, "speeds": None, "load": 0.85}, "machines"),
        ({"machines": 2, "speeds": [1.0], "load": 0.85}, "speeds"),
        ({"machines": 2, "speeds": [1.0, -1.0], "load": 0.85}, "speeds"),
        ({"machines": 1, "speeds": None, "load": "high"}, "load"),
        ("four", "setting"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_file_and_field(tmp_path, queue, bad, field):
    verdict(tmp_path, "x", "edd", "edd", where=bad)
    with pytest.raises(RankInputError, match=field) as exc:
        rank(queue, now=NOW, config=conf(tmp_path))
    assert "winner.json" in str(exc.value)


def test_an_explicit_policy_trained_for_other_gpus_says_so(tmp_path, tiny_policy):
    pfile, _ = tiny_policy
    tasks = static_queue(seed=6, n=20)
    one = rank(tasks, now=NOW, policy="ppo", policy_file=pfile, explain=True, config=conf(tmp_path))
    assert "asked for by the call" in one.why.iloc[0] and "trained for" not in one.why.iloc[0]
    four = rank(
        tasks, now=NOW, policy="ppo", policy_file=pfile, machines=4, explain=True, config=conf(tmp_path)
    )
    assert "trained for 1 GPU" in four.why.iloc[0] and "4 GPUs" in four.why.iloc[0]


STUDIO_WORKLOAD = {
    "sha256": "ab" * 32,
    "history": ["example_history"],
    "fitted": ["2024-06-03", "2024-06-23"],
    "held_out": ["2024-06-24", "2024-06-30"],
}


def studio_verdict(tmp_path, policy, rule, held_out=None):
    verdict(tmp_path, "studio", policy, rule, where={**setting(1, load=0.57), "workload": STUDIO_WORKLOAD})
    if held_out is not None:
        import json

        path = tmp_path / "robustness" / "studio" / "winner.json"
        w = json.loads(path.read_text())
        w["held_out"] = held_out
        write_json(path, w)


def test_with_a_history_auto_follows_the_studio_verdict(tmp_path, queue):
    # the main benchmark's winner is measured at the config's load; the studio's on the fitted workload
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    studio_verdict(
        tmp_path, "edd", "edd", held_out={"days": 7, "chosen": "ppo-2", "best_rule": "edd", "deployed": False}
    )
    by = orders(queue, conf(tmp_path), 1)
    # without a history: today's behaviour, the verdict at the closest load (the main one)
    assert rank(queue, now=NOW, config=conf(tmp_path)) == by["wmdd"]
    c = {**conf(tmp_path), "workload": {"history": ["h.csv"]}}
    assert rank(queue, now=NOW, config=c) == by["edd"]
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert (
        "the winner of setting studio, measured on the fitted workload of example_history (7 held-out days)"
        in why
    )
    assert "ppo-2, chosen on validation, is significantly worse than edd on the 7 held-out days" in why
    # 4 GPUs: the studio's verdict is for 1 GPU; not followed
    assert "studio" not in rank(queue, now=NOW, machines=4, explain=True, config=c).why.iloc[0]


def test_a_studio_verdict_without_held_out_days_is_not_preferred(tmp_path, queue):
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    verdict(
        tmp_path,
        "studio",
        "edd",
        "edd",
        where={**setting(1, load=0.57), "workload": {**STUDIO_WORKLOAD, "held_out": None}},
    )
    c = {**conf(tmp_path), "workload": {"history": ["h.csv"]}}
    assert "main benchmark" in rank(queue, now=NOW, explain=True, config=c).why.iloc[0]


def test_a_studio_rule_that_is_also_the_best_on_the_held_out_days_says_so(tmp_path, queue):
    studio_verdict(
        tmp_path,
        "wmdd",
        "wmdd",
        held_out={"days": 7, "chosen": "wmdd", "best_rule": "wmdd", "deployed": True},
    )
    c = {**conf(tmp_path), "workload": {"history": ["h.csv"]}}
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert why.endswith("; also the best rule on the 7 held-out days") and "not significantly" not in why
