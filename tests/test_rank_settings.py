"""rank(policy="auto") follows the verdict measured on the call's GPUs (issue 16, part 1).

The main benchmark's winner.json and each robustness setting's record the
setting they were measured on; a call never runs a verdict of other GPUs, and
``explain`` says which verdict was followed and why.
"""

import hashlib
import json
import os

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


#: The bytes of the studio's fitted workload (results/workload.json under the config's root):
#: a verdict records their sha256; rank() reads nothing else of the file.
HISTORY = b"id,submitted_at\n1,2024-06-03T00:00:00Z\n"  # the config's workload.history, h.csv
#: rank() also checks the sources the fit records against the config's history now (issue 58)
FIT = json.dumps(
    {
        "format": "sched-workload/1",
        "sources": [{"path": "h.csv", "sha256": hashlib.sha256(HISTORY).hexdigest()}],
    }
).encode()
STUDIO_WORKLOAD = {
    "sha256": hashlib.sha256(FIT).hexdigest(),
    "history": ["example_history"],
    "fitted": ["2024-06-03", "2024-06-23"],
    "held_out": ["2024-06-24", "2024-06-30"],
}


def studio_verdict(tmp_path, policy, rule, held_out=None, workload=STUDIO_WORKLOAD):
    """The studio's winner.json, and the fit it was measured on (results/workload.json)."""
    k = 0.4 if policy == "atc-tuned" else None  # atc-tuned's k: a verdict without it is refused (issue 58)
    verdict(tmp_path, "studio", policy, rule, atc_k=k, where={**setting(1, load=0.57), "workload": workload})
    fit = tmp_path / "results" / "workload.json"
    fit.parent.mkdir(exist_ok=True)
    fit.write_bytes(FIT)
    (tmp_path / "h.csv").write_bytes(HISTORY)
    if held_out is not None:
        path = tmp_path / "robustness" / "studio" / "winner.json"
        w = json.loads(path.read_text())
        w["held_out"] = held_out
        write_json(path, w)


def with_history(tmp_path):
    """A config naming a history, its relative paths (results/workload.json) under tmp_path."""
    return {**conf(tmp_path), "root": str(tmp_path), "workload": {"history": ["h.csv"]}}


def test_with_a_history_auto_follows_the_studio_verdict(tmp_path, queue):
    # the main benchmark's winner is measured at the config's load; the studio's on the fitted workload
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    studio_verdict(
        tmp_path, "edd", "edd", held_out={"days": 7, "chosen": "ppo-2", "best_rule": "edd", "deployed": False}
    )
    by = orders(queue, conf(tmp_path), 1)
    # without a history: today's behaviour, the verdict at the closest load (the main one)
    assert rank(queue, now=NOW, config=conf(tmp_path)) == by["wmdd"]
    c = with_history(tmp_path)
    assert rank(queue, now=NOW, config=c) == by["edd"]
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert (
        "the winner of setting studio, measured on the fitted workload of example_history (7 held-out days)"
        in why
    )
    assert "ppo-2, chosen on validation, is significantly worse than edd on the 7 held-out days" in why
    # 4 GPUs: the studio's verdict is for 1 GPU; not followed
    assert "studio" not in rank(queue, now=NOW, machines=4, explain=True, config=c).why.iloc[0]


def test_a_studio_verdict_not_confirmed_runs_the_incumbent_and_says_why(tmp_path, queue):
    # issue 50: the held-out confirmation failed (sched.verdict.held_out.held_out_gate): winner.json
    # is the incumbent (atc-tuned here, a rule with its k) and its held_out record says why
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    failed = ["worse than the incumbent atc-tuned by more than the margin (2 %)"]
    held = {"days": 7, "chosen": "spt", "incumbent": "atc-tuned", "best_rule": "atc-tuned",
            "best_rule_on": "incumbent", "deployed": False, "confirmed": False, "failed": failed}  # fmt: skip
    studio_verdict(tmp_path, "atc-tuned", "atc", held_out=held)
    c = with_history(tmp_path)
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert why.endswith(
        "; spt, chosen on validation, is not confirmed on the 7 held-out days (worse than the incumbent "
        "atc-tuned by more than the margin (2 %)): the incumbent atc-tuned runs"
    )
    held["failed"] = "not a list"
    studio_verdict(tmp_path, "atc-tuned", "atc", held_out=held)
    with pytest.raises(Exception, match="field held_out.failed: expected a list of reasons"):
        rank(queue, now=NOW, config=c)


def test_a_studio_verdict_without_held_out_days_is_not_preferred(tmp_path, queue):
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    studio_verdict(tmp_path, "edd", "edd", workload={**STUDIO_WORKLOAD, "held_out": None})
    c = with_history(tmp_path)
    assert "main benchmark" in rank(queue, now=NOW, explain=True, config=c).why.iloc[0]


def test_a_studio_rule_that_is_also_the_best_on_the_held_out_days_says_so(tmp_path, queue):
    studio_verdict(
        tmp_path,
        "wmdd",
        "wmdd",
        held_out={"days": 7, "chosen": "wmdd", "best_rule": "wmdd", "deployed": True},
    )
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))  # else why names it missing
    why = rank(queue, now=NOW, explain=True, config=with_history(tmp_path)).why.iloc[0]
    assert why.endswith("; also the best rule on the 7 held-out days") and "not significantly" not in why


def test_a_studio_verdict_measured_on_another_fit_is_not_followed(tmp_path, queue):
    # issue 32, item 10: workload.history now names another file, and results/workload.json was
    # refitted on it: the studio's verdict (edd) was measured on the old fit
    verdict(tmp_path, None, "wmdd", "wmdd", where=setting(1))
    studio_verdict(
        tmp_path, "edd", "edd", held_out={"days": 7, "chosen": "edd", "best_rule": "edd", "deployed": True}
    )
    c = with_history(tmp_path)
    by = orders(queue, c, 1)
    assert rank(queue, now=NOW, config=c) == by["edd"]  # the fit it was measured on
    fit = tmp_path / "results" / "workload.json"
    fit.write_bytes(b'{"format": "sched-workload/1", "fitted on": "other_history"}')
    refit = hashlib.sha256(fit.read_bytes()).hexdigest()
    assert rank(queue, now=NOW, config=c) == by["wmdd"]  # as if it were absent: the main verdict
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert why.startswith("auto: the winner of the main benchmark, measured on 1 GPU")
    assert (
        f"; the verdict of setting studio was measured on another fitted workload (sha256 "
        f"{STUDIO_WORKLOAD['sha256'][:12]}…) than {fit} (sha256 {refit[:12]}…), the fit of config "
        "workload.history: not followed"
    ) in why
    assert "measured on the fitted workload of example_history" not in why
    # no other verdict for the GPUs: ATC, saying why; the studio's tuned k is not used either
    os.unlink(tmp_path / "winner.json")
    write_json(tmp_path / "robustness" / "studio" / "tuned.json", {"atc_k": 0.3, "setting": setting(1)})
    table = rank(queue, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"atc"} and "not followed" in table.why.iloc[0]
    # the fit gone: not followed either, and said so
    fit.unlink()
    why = rank(queue, now=NOW, explain=True, config=c).why.iloc[0]
    assert f"than {fit} (not found or not readable)" in why and "not followed" in why


def test_auto_names_a_missing_main_winner_whatever_it_follows(tmp_path, queue):
    # issue 32, item 14: no main winner.json, and a setting's verdict for the call's GPUs
    verdict(tmp_path, "load-0.90", "edd", "edd", where=setting(1, load=0.90))
    why = rank(queue, now=NOW, explain=True, config=conf(tmp_path)).why.iloc[0]
    assert why.startswith("auto: the winner of setting load-0.90")
    assert f"; note: config rank.winner {tmp_path / 'winner.json'} not found" in why
    # the studio's verdict followed: the same
    studio_verdict(
        tmp_path,
        "wmdd",
        "wmdd",
        held_out={"days": 7, "chosen": "wmdd", "best_rule": "wmdd", "deployed": True},
    )
    why = rank(queue, now=NOW, explain=True, config=with_history(tmp_path)).why.iloc[0]
    assert why.startswith("auto: the winner of setting studio")
    assert f"; note: config rank.winner {tmp_path / 'winner.json'} not found" in why


def test_the_verdict_and_config_caches_see_a_rewrite_that_restores_the_mtime(tmp_path, queue):
    """Issue 32, item 14: winner.json and the config rewritten in place, same size, the
    modification time restored: the change time tells."""
    from .test_policy_file import rewrite_in_place

    verdict(tmp_path, None, "edd", "edd", where=setting(1))
    c = conf(tmp_path)
    by = orders(queue, c, 1)
    assert rank(queue, now=NOW, config=c) == by["edd"]
    path = tmp_path / "winner.json"
    rewrite_in_place(path, path.read_bytes().replace(b'"edd"', b'"spt"'))
    assert rank(queue, now=NOW, config=c) == rank(queue, now=NOW, policy="spt", config=c)
    # the config file: rules.atc_k 2.0 -> 3.0
    cfg = tmp_path / "config.yaml"
    cfg.write_text("rules:\n  atc_k: 2.0\n")
    assert set(rank(queue, now=NOW, policy="atc", explain=True, config=str(cfg)).atc_k) == {2.0}
    rewrite_in_place(cfg, b"rules:\n  atc_k: 3.0\n")
    assert set(rank(queue, now=NOW, policy="atc", explain=True, config=str(cfg)).atc_k) == {3.0}
