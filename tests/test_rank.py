"""rank(tasks): order, policies, machines, clocks, input checks and the CLI."""

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from sched import RankInputError, rank
from sched.config import validate_config
from sched.data.scenario import generate, scenario_model
from sched.sim import core, reference, rules
from sched.sim.one_queue import rollout_order

from .conftest import ROOT, run_here

NOW = 10_000.0


def conf(tmp_path, atc_k=None):
    """A config whose rank files live in tmp_path (absent unless a test writes them)."""
    c = {
        "rank": {
            "winner": str(tmp_path / "winner.json"),
            "tuned": str(tmp_path / "tuned.json"),
            "settings": str(tmp_path / "robustness"),
        }
    }
    if atc_k is not None:
        c["rules"] = {"atc_k": atc_k}
    return c


def static_queue(seed, n, now=NOW, ties=4):
    """A generated queue, all waiting at ``now``; some due dates already passed; the last
    ``ties`` tasks copy the first ones (equal for every rule: ties)."""
    f = generate(scenario_model(validate_config({})), seed, tasks=n).frame
    tasks = [
        {"id": f"t{i}", "estimate_s": float(e), "weight": float(w), "due": now + float(d - a) - 900.0}
        for i, (e, w, d, a) in enumerate(zip(f.estimate_s, f.weight, f.due_s, f.arrival_s))
    ]
    tasks += [dict(tasks[i], id=f"copy{i}") for i in range(ties)]
    return tasks


def columns(tasks, now=NOW):
    est = [t["estimate_s"] for t in tasks]
    return (
        [t.get("arrival", now) for t in tasks],
        est,
        est,
        [t["weight"] for t in tasks],
        [t["due"] for t in tasks],
    )


def start_order(start, machine):
    # a decision at a time fills the lowest free machine first
    return sorted(range(len(start)), key=lambda j: (start[j], machine[j]))


# --------------------------------------------------------------------------- the order


@pytest.mark.parametrize("machines", [1, 3])
@pytest.mark.parametrize("rule", rules.RULES)
def test_order_is_the_reference_simulators_start_order(tmp_path, rule, machines):
    tasks = static_queue(seed=7, n=40)
    start, _, mach = reference.simulate(
        *columns(tasks), rule, machines=machines, k=2.0, machine_free=[NOW] * machines
    )
    expected = [tasks[j]["id"] for j in start_order(start, mach)]
    assert rank(tasks, now=NOW, policy=rule, machines=machines, config=conf(tmp_path)) == expected


def test_atc_uses_the_configured_k(tmp_path):
    tasks = static_queue(seed=3, n=60)
    orders = {}
    for k in (0.2, 5.0):
        start, _, mach = reference.simulate(*columns(tasks), "atc", k=k, machine_free=[NOW])
        orders[k] = [tasks[j]["id"] for j in start_order(start, mach)]
        assert rank(tasks, now=NOW, policy="atc", config=conf(tmp_path, atc_k=k)) == orders[k]
    assert orders[0.2] != orders[5.0]  # k matters on this queue, so the test means something


@pytest.mark.parametrize("rule", ["fifo", "atc", "wmdd"])
def test_compiled_path_is_the_simulators_schedule(rule):
    # Dynamic scenarios with busy machines: rollout_order must give exactly the
    # schedule of core.simulate, and its order the decision order.
    for seed, M in ((1, 1), (2, 2), (3, 4)):
        arr, _, est, w, due = generate(
            scenario_model(validate_config({})), seed, tasks=150, machines=M
        ).arrays
        arr = arr.copy()
        arr[10:20] = arr[10]  # equal arrivals: the tie rule
        free = np.linspace(0.0, 300.0, M)
        rid = rules.rule_id(rule)
        order, start, end, mach = rollout_order(arr, est, w, due, free, np.ones(len(free)), rid, 2.0)
        s2, e2, m2 = core.simulate(arr, est, est, w, due, rule, machines=M, k=2.0, machine_free=free)
        np.testing.assert_array_equal(start, s2)
        np.testing.assert_array_equal(end, e2)
        np.testing.assert_array_equal(mach, m2)
        assert order.tolist() == start_order(start.tolist(), mach.tolist())


def test_fifo_follows_arrival_then_position(tmp_path):
    tasks = [
        {"id": i, "estimate_s": 10.0, "weight": 1, "due": 0, "arrival": a}
        for i, a in enumerate([5.0, 1.0, 5.0, 3.0, 1.0])
    ]
    assert rank(tasks, now=6.0, policy="fifo", config=conf(tmp_path)) == [1, 4, 3, 0, 2]


def test_same_input_same_output_and_ties_follow_input_position(tmp_path):
    tasks = static_queue(seed=11, n=30)
    first = rank(tasks, now=NOW, config=conf(tmp_path))
    assert all(rank(tasks, now=NOW, config=conf(tmp_path)) == first for _ in range(3))
    same = [{"id": c, "estimate_s": 60.0, "weight": 2.0, "due": NOW + 50} for c in "qwerty"]
    for rule in rules.RULES:
        assert rank(same, now=NOW, policy=rule, config=conf(tmp_path)) == list("qwerty")


def test_empty_queue_and_past_due_dates(tmp_path):
    assert rank([], now=NOW, config=conf(tmp_path)) == []
    table = rank([], now=NOW, explain=True, config=conf(tmp_path))
    assert len(table) == 0 and {"id", "machine", "start_s", "end_s"} <= set(table.columns)
    late = [{"id": "late", "estimate_s": 30.0, "weight": 2.0, "due": NOW - 3600}]
    row = rank(late, now=NOW, explain=True, config=conf(tmp_path)).iloc[0]
    assert row.tardiness_s == pytest.approx(3630.0) and row.lateness_s == pytest.approx(3630.0)


def test_ten_thousand_tasks(tmp_path):
    f = generate(scenario_model(validate_config({})), 5, tasks=10_000).frame
    tasks = [
        {"id": int(i), "estimate_s": float(e), "weight": float(w), "due": float(d)}
        for i, e, w, d in zip(f.id, f.estimate_s, f.weight, f.due_s)
    ]
    order = rank(tasks, now=0.0, policy="atc", machines=4, config=conf(tmp_path))
    assert sorted(order) == list(range(10_000))
    # FIFO on a static queue is the input order
    assert rank(tasks, now=0.0, policy="fifo", config=conf(tmp_path)) == list(range(10_000))


# --------------------------------------------------------------------------- machines


def test_busy_machines_are_respected(tmp_path):
    tasks = static_queue(seed=4, n=30)
    free = [NOW + 500.0, NOW - 100.0, NOW + 40.0]  # the second is free now
    table = rank(tasks, now=NOW, policy="atc", machines=free, explain=True, config=conf(tmp_path))
    for m, t in enumerate(free):
        starts = table.start_s[table.machine == m]
        assert len(starts) and starts.min() >= max(t, NOW)
    assert table.start_s.min() == NOW
    start, _, mach = reference.simulate(
        *columns(tasks), "atc", machines=3, machine_free=[max(t, NOW) for t in free]
    )
    assert table.id.tolist() == [tasks[j]["id"] for j in start_order(start, mach)]
    # the plan keeps each machine busy one task after the other
    for m in range(3):
        rows = table[table.machine == m]
        assert (rows.start_s.to_numpy()[1:] >= rows.end_s.to_numpy()[:-1]).all()


@pytest.mark.parametrize("machines", [1, 2, [NOW - 7200.0, NOW + 60.0]])
def test_tasks_that_arrived_earlier_start_now_at_the_earliest(tmp_path, machines):
    tasks = [dict(t, arrival=NOW - 3600.0 + 97.0 * i) for i, t in enumerate(static_queue(seed=5, n=30))]
    table = rank(tasks, now=NOW, policy="atc", machines=machines, explain=True, config=conf(tmp_path))
    assert table.start_s.min() == NOW
    M = machines if isinstance(machines, int) else len(machines)
    free = [NOW] * M if isinstance(machines, int) else [max(t, NOW) for t in machines]
    start, _, mach = reference.simulate(*columns(tasks), "atc", machines=M, machine_free=free)
    assert table.id.tolist() == [tasks[j]["id"] for j in start_order(start, mach)]


def test_a_count_of_machines_means_all_free_now(tmp_path):
    tasks = static_queue(seed=4, n=10)
    assert rank(tasks, now=NOW, machines=2, config=conf(tmp_path)) == rank(
        tasks, now=NOW, machines=[NOW, NOW - 5000], config=conf(tmp_path)
    )


# --------------------------------------------------------------------------- policy "auto" and others


def write_json(path, data):
    path.write_text(json.dumps(data))
    st = path.stat()  # a later rewrite in the same clock tick must still be seen
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def winner(policy, rule=None, atc_k=None, policy_file=None):
    return {
        "policy": policy,
        "rule": rule,
        "atc_k": atc_k,
        "policy_file": policy_file,
        "significant": True,
        "runner_up": "atc",
        "mean_difference_pct": -3.0,
        "ci95_pct": [-4.0, -2.0],
        "reason": "test",
    }


def test_auto_follows_winner_json_and_falls_back_to_atc(tmp_path):
    tasks = static_queue(seed=2, n=60)
    c = conf(tmp_path)
    by_rule = {r: rank(tasks, now=NOW, policy=r, config=c) for r in rules.RULES}
    assert by_rule["wmdd"] != by_rule["atc"] and by_rule["edd"] != by_rule["atc"]

    assert rank(tasks, now=NOW, config=c) == by_rule["atc"]  # no winner.json
    assert rank(tasks, now=NOW, explain=True, config=c).policy.iloc[0] == "atc"

    write_json(tmp_path / "winner.json", winner("wmdd", rule="wmdd"))
    assert rank(tasks, now=NOW, config=c) == by_rule["wmdd"]
    table = rank(tasks, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"wmdd"} and table.atc_k.isna().all()

    write_json(tmp_path / "winner.json", winner("edd", rule="edd"))  # a new verdict is seen
    assert rank(tasks, now=NOW, config=c) == by_rule["edd"]

    write_json(tmp_path / "winner.json", winner("atc-tuned", rule="atc", atc_k=0.3))
    assert rank(tasks, now=NOW, config=c) == rank(
        tasks, now=NOW, policy="atc", config=conf(tmp_path, atc_k=0.3)
    )
    table = rank(tasks, now=NOW, explain=True, config=c)
    assert set(table.policy) == {"atc-tuned"} and set(table.atc_k) == {0.3}
    assert rank(tasks, now=NOW, policy="atc-tuned", config=c) == rank(tasks, now=NOW, config=c)

    (tmp_path / "winner.json").unlink()
    assert rank(tasks, now=NOW, config=c) == by_rule["atc"]


def test_atc_tuned_reads_tuned_json(tmp_path):
    tasks = static_queue(seed=2, n=40)
    c = conf(tmp_path)
    with pytest.raises(RankInputError, match="atc-tuned.*tuned"):
        rank(tasks, now=NOW, policy="atc-tuned", config=c)
    write_json(tmp_path / "tuned.json", {"atc_k": 0.7, "grid": [0.5, 0.7, 1.0]})
    assert rank(tasks, now=NOW, policy="atc-tuned", config=c) == rank(
        tasks, now=NOW, policy="atc", config=conf(tmp_path, atc_k=0.7)
    )
    write_json(tmp_path / "tuned.json", {"atc_k": -1})
    with pytest.raises(RankInputError, match="tuned.json.*atc_k"):
        rank(tasks, now=NOW, policy="atc-tuned", config=c)


@pytest.mark.parametrize(
    "content, field",
    [
        ("{not json", "JSON"),
        ("[" * 100_000, "nested (too deeply|more than)"),  # sched.formats.json_input: MAX_JSON_DEPTH
        (json.dumps([1, 2]), "object"),
        (json.dumps(winner("x", rule="nope")), "rule"),
        (json.dumps(winner("atc", rule="atc", atc_k=0)), "atc_k"),
        (json.dumps(winner("x")), "policy_file"),
        (json.dumps(winner("ppo-1", policy_file="no/such/politique.pt")), "not found"),
    ],
)
def test_a_bad_winner_json_is_refused_naming_the_file(tmp_path, content, field):
    (tmp_path / "winner.json").write_text(content)
    with pytest.raises(RankInputError, match=field) as exc:
        rank(static_queue(seed=1, n=5), now=NOW, config=conf(tmp_path))
    assert "winner.json" in str(exc.value) or "politique.pt" in str(exc.value)


def test_policy_arguments_are_checked(tmp_path):
    tasks = static_queue(seed=1, n=5)
    c = conf(tmp_path)
    with pytest.raises(RankInputError, match="unknown policy"):
        rank(tasks, now=NOW, policy="fastest", config=c)
    with pytest.raises(RankInputError, match="policy_file"):
        rank(tasks, now=NOW, policy="ppo", config=c)
    with pytest.raises(RankInputError, match="not found"):
        rank(tasks, now=NOW, policy="ppo", policy_file=tmp_path / "none.pt", config=c)
    with pytest.raises(RankInputError, match="only used with"):
        rank(tasks, now=NOW, policy="atc", policy_file=tmp_path / "none.pt", config=c)
    with pytest.raises(RankInputError, match="not found"):
        rank(tasks, now=NOW, policy="ppo-987654", config=c)


def test_a_file_that_is_not_a_policy_is_refused(tmp_path):
    # The contract: every bad input to rank() is a RankInputError, a damaged
    # policy file included (its PolicyFileError is the cause); as a file the call reads
    # (not the call's tasks) it is a RankSetupError, which sched serve tells apart.
    from sched.learn.policy.policy_file import PolicyFileError
    from sched.ranking.tasks import RankSetupError

    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a policy")
    for kw in ({"policy": str(junk)}, {"policy": "ppo", "policy_file": junk}):
        with pytest.raises(RankInputError) as exc:
            rank(static_queue(seed=1, n=5), now=NOW, config=conf(tmp_path), **kw)
        assert type(exc.value) is RankSetupError
        assert isinstance(exc.value.__cause__, PolicyFileError)
        assert "junk.pt: not a readable policy file" in str(exc.value)


def test_a_bad_config_is_a_rank_input_error(tmp_path):
    from sched.config import ConfigError
    from sched.ranking.tasks import RankSetupError

    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: {atc_k: -1}\n")
    for c in (str(bad), str(tmp_path / "none.yaml"), {"rules": {"atc_k": float("nan")}}):
        with pytest.raises(RankInputError) as exc:
            rank([_ok()], now=0.0, config=c)
        assert type(exc.value) is RankSetupError and isinstance(exc.value.__cause__, ConfigError)
        assert "atc_k" in str(exc.value) or "none.yaml" in str(exc.value)


def test_ppo_order_is_the_greedy_rollouts_start_order(tmp_path, distinct_policy):
    from sched.data.scenario import Scenario
    from sched.evaluate.runs import schedule_scenarios

    from .conftest import starts_unlike_atc

    policy_file = str(distinct_policy)

    tasks = static_queue(seed=9, n=50)
    arr, dur, _, w, due = columns(tasks)
    # the policy orders this queue unlike ATC: the test covers its correction network
    assert starts_unlike_atc(distinct_policy, columns(tasks), 2, [NOW, NOW]) > 0
    frame = pd.DataFrame(
        {
            "id": [t["id"] for t in tasks],
            "kind": "image",
            "arrival_s": arr,
            "duration_s": dur,
            "weight": w,
            "due_s": due,
            "estimate_s": dur,
        }
    )
    ((start, _, mach),) = schedule_scenarios(
        [Scenario("q", frame)], "ppo", machines=2, policy_file=policy_file, machine_free=[NOW, NOW]
    )
    expected = [tasks[j]["id"] for j in start_order(list(start), list(mach))]
    got = rank(tasks, now=NOW, policy="ppo", policy_file=policy_file, machines=2, config=conf(tmp_path))
    assert got == expected
    assert got == rank(tasks, now=NOW, policy=policy_file, machines=2, config=conf(tmp_path))


# --------------------------------------------------------------------------- input forms


def test_priority_classes_and_duration_s_stand_in(tmp_path):
    base = static_queue(seed=6, n=25, ties=0)
    weights = {1.0: "low", 2.0: "normal", 4.0: "high", 8.0: "urgent"}
    alt = [
        {"id": t["id"], "duration_s": t["estimate_s"], "priority": weights[t["weight"]], "due": t["due"]}
        for t in base
    ]
    for rule in ("atc", "wspt", "wmdd"):
        assert rank(alt, now=NOW, policy=rule, config=conf(tmp_path)) == rank(
            base, now=NOW, policy=rule, config=conf(tmp_path)
        )


def test_datetimes_with_time_zones_are_seconds_on_one_clock(tmp_path):
    tasks = static_queue(seed=8, n=30)
    epoch = datetime(2026, 5, 9, 12, 0, tzinfo=UTC)
    paris = timezone(timedelta(hours=2))

    # whole seconds (and half-seconds): exact on both clocks, so even near-ties agree
    tasks = [dict(t, estimate_s=round(t["estimate_s"] * 2) / 2, due=float(round(t["due"]))) for t in tasks]
    dated = []
    for i, t in enumerate(tasks):
        d = (epoch + timedelta(seconds=t["due"] - NOW)).astimezone(paris if i % 2 else UTC)
        dated.append(
            dict(
                t, due=d.isoformat() if i % 3 else d, arrival=(epoch - timedelta(seconds=60 * i)).isoformat()
            )
        )
    numeric = [dict(t, arrival=NOW - 60 * i) for i, t in enumerate(tasks)]
    for rule in ("fifo", "atc", "wmdd"):
        assert rank(dated, now=epoch, policy=rule, machines=2, config=conf(tmp_path)) == rank(
            numeric, now=NOW, policy=rule, machines=2, config=conf(tmp_path)
        )
    table = rank(dated, now=epoch.astimezone(paris).isoformat(), explain=True, config=conf(tmp_path))
    assert str(table.start_at.dt.tz) == "UTC+02:00"
    assert table.start_at.iloc[0] == epoch
    for s, when in zip(table.end_s, table.end_at):
        assert when.timestamp() == pytest.approx(s)
    # numbers beside zoned dates are POSIX seconds
    busy = rank(dated, now=epoch, machines=[epoch.timestamp() + 600], explain=True, config=conf(tmp_path))
    assert busy.start_at.iloc[0] == epoch + timedelta(seconds=600)


def test_without_now_datetimes_are_planned_from_the_current_time(tmp_path):
    import time

    due = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    before = time.time()
    table = rank([{"id": "a", "estimate_s": 5, "weight": 1, "due": due}], explain=True, config=conf(tmp_path))
    assert before <= table.start_s.iloc[0] <= time.time()


def test_naive_datetimes_alone_are_read_on_one_wall_clock(tmp_path):
    tasks = [
        {"id": "a", "estimate_s": 600, "weight": 1, "due": "2026-05-09T12:30:00"},
        {"id": "b", "estimate_s": 60, "weight": 1, "due": "2026-05-09T12:05:00"},
    ]
    table = rank(tasks, now="2026-05-09T12:00:00", policy="edd", explain=True, config=conf(tmp_path))
    assert table.id.tolist() == ["b", "a"]
    assert table.end_at.tolist() == [pd.Timestamp("2026-05-09T12:01:00"), pd.Timestamp("2026-05-09T12:11:00")]


def test_dataframe_input_gives_the_same_order_and_keeps_id_types(tmp_path):
    tasks = [dict(t, id=i) for i, t in enumerate(static_queue(seed=12, n=30))]
    frame = pd.DataFrame(tasks)
    frame["arrival"] = np.nan  # NaN: absent, the default (now)
    expected = rank(tasks, now=NOW, machines=2, config=conf(tmp_path))
    got = rank(frame, now=NOW, machines=2, config=conf(tmp_path))
    assert got == expected and all(type(i) is int for i in got)
    assert rank(frame.set_index("id"), now=NOW, machines=2, config=conf(tmp_path)) == expected


def test_explain_table(tmp_path):
    tasks = static_queue(seed=13, n=20)
    table = rank(tasks, now=NOW, machines=2, explain=True, config=conf(tmp_path))
    assert list(table.columns) == [
        "id",
        "machine",
        "start_s",
        "end_s",
        "lateness_s",
        "tardiness_s",
        "policy",
        "atc_k",
        "why",
    ]
    assert table.id.tolist() == rank(tasks, now=NOW, machines=2, config=conf(tmp_path))
    assert (np.diff(table.start_s) >= 0).all()
    by_id = {t["id"]: t for t in tasks}
    due = np.array([by_id[i]["due"] for i in table.id])
    est = np.array([by_id[i]["estimate_s"] for i in table.id])
    np.testing.assert_allclose(table.end_s - table.start_s, est)
    np.testing.assert_allclose(table.lateness_s, table.end_s - due)
    np.testing.assert_allclose(table.tardiness_s, np.maximum(table.end_s - due, 0))
    assert set(table.policy) == {"atc"} and set(table.atc_k) == {2.0}
    assert set(table.machine) == {0, 1}


def test_duration_model_estimates_tasks_without_an_estimate(tmp_path, monkeypatch):
    # The wiring only: sched.data.bench.calibration.predict_duration (issue 3) is called
    # with the configured calibration, the task's kind and its other fields.
    import types

    calls = []

    def predict_duration(calibration, kind, features):
        calls.append((calibration, kind, features))
        if kind == "odd":
            raise ValueError("unknown kind 'odd'")
        return features["frames"] * 2.0

    try:
        import sched.data.bench.calibration as cal

        monkeypatch.setattr(cal, "predict_duration", predict_duration, raising=False)
    except ImportError:
        monkeypatch.setitem(
            sys.modules,
            "sched.data.bench.calibration",
            types.SimpleNamespace(predict_duration=predict_duration),
        )
    c = dict(conf(tmp_path), scenario={"calibration": "cal.json"})
    tasks = [
        {"id": "v", "kind": "video", "frames": 100, "weight": 1, "due": 0},
        {"id": "i", "kind": "image", "frames": 1, "weight": 1, "due": 0},
        {"id": "e", "estimate_s": 50.0, "kind": "image", "frames": 9, "weight": 1, "due": 0},
    ]
    table = rank(tasks, now=0.0, policy="spt", explain=True, config=c)
    assert table.id.tolist() == ["i", "e", "v"]
    assert (table.end_s - table.start_s).tolist() == [2.0, 50.0, 200.0]
    assert calls[0] == ("cal.json", "video", {"frames": 100})
    assert len(calls) == 2
    with pytest.raises(RankInputError, match="'o'.*estimate_s.*unknown kind"):
        rank([{"id": "o", "kind": "odd", "weight": 1, "due": 0}], now=0.0, config=c)
    with pytest.raises(RankInputError, match="'k'.*field kind"):
        rank([{"id": "k", "weight": 1, "due": 0}], now=0.0, config=c)


def test_duration_model_of_a_real_calibration(calibrated):
    # The `calibrated` fixture builds a calibration from the example bench logs.
    from sched.data.bench.calibration import predict_duration

    tasks = [
        {
            "id": "clip",
            "kind": "video",
            "width": 1280,
            "height": 720,
            "frames": 120,
            "steps": 20,
            "weight": 2,
            "due": 900,
        },
        {
            "id": "still",
            "kind": "image",
            "width": 1024,
            "height": 1024,
            "frames": 1,
            "steps": 30,
            "weight": 1,
            "due": 600,
        },
        {"id": "bare", "kind": "image", "weight": 1, "due": 300},
    ]
    table = rank(tasks, now=0.0, policy="fifo", explain=True, config=str(calibrated.config))
    for row, task in zip(table.itertuples(), tasks):
        features = {k: v for k, v in task.items() if k not in ("id", "kind", "weight", "due")}
        assert row.end_s - row.start_s == pytest.approx(
            predict_duration(str(calibrated.calibration), task["kind"], features)
        )
    with pytest.raises(RankInputError, match="'x'.*estimate_s"):
        rank([{"id": "x", "kind": "hologram", "weight": 1, "due": 0}], now=0.0, config=str(calibrated.config))


# --------------------------------------------------------------------------- bad input


def _ok(**kw):
    return dict({"id": "x", "estimate_s": 30.0, "weight": 1.0, "due": 100.0}, **kw)


def _without(field):
    t = _ok()
    del t[field]
    return t


BAD = [
    ([_without("id")], "#1", "id", "missing"),
    ([_without("due")], "'x'", "due", "missing"),
    ([_without("estimate_s")], "'x'", "estimate_s", "missing"),
    ([_without("weight")], "'x'", "weight", "missing"),
    ([_ok(), _ok(id="y"), _ok()], "'x'", "id", "duplicate"),
    ([_ok(estimate_s=float("nan"))], "'x'", "estimate_s", "finite"),
    ([_ok(estimate_s=float("inf"))], "'x'", "estimate_s", "finite"),
    ([_ok(estimate_s=0)], "'x'", "estimate_s", "> 0"),
    ([_ok(estimate_s=-5.0)], "'x'", "estimate_s", "> 0"),
    ([_without("estimate_s") | {"duration_s": 0.0}], "'x'", "duration_s", "> 0"),
    ([_ok(estimate_s="30")], "'x'", "estimate_s", "not a number"),
    ([_ok(estimate_s=True)], "'x'", "estimate_s", "not a number"),
    ([_ok(weight=0)], "'x'", "weight", "> 0"),
    ([_ok(weight=-1.0)], "'x'", "weight", "> 0"),
    ([_without("weight") | {"priority": "vip"}], "'x'", "priority", "unknown priority class"),
    ([_ok(due="next tuesday")], "'x'", "due", "unparsable date"),
    ([_ok(arrival="2026-13-45T00:00:00Z")], "'x'", "arrival", "unparsable date"),
    ([_ok(due=float("nan"))], "'x'", "due", "finite"),
    ([_ok(due="2026-05-09T12:00:00")], "'x'", "due", "no time zone"),
    ([_ok(id="a"), _ok(id="b", due="2026-05-09T12:00:00")], "'b'", "due", "no time zone"),
    ([_ok(due="2026-05-09T12:00:00Z", arrival="2026-05-09T11:00:00")], "'x'", "arrival", "no time zone"),
    (["x"], "#1", None, "object"),
]


BAD += [
    # values beyond the documented limits, which could make a start, end or lateness infinite
    ([_ok(estimate_s=1e308)], "'x'", "estimate_s", "at most 1e+12 s (sched.limits.MAX_SECONDS)"),
    ([_ok(estimate_s=10**400)], "'x'", "estimate_s", "at most 1e+12 s"),
    ([_without("estimate_s") | {"duration_s": 2e12}], "'x'", "duration_s", "at most 1e+12 s"),
    ([_ok(weight=1e300)], "'x'", "weight", "at most 1e+06 (sched.limits.MAX_WEIGHT)"),
    ([_ok(weight=-(10**400))], "'x'", "weight", "> 0"),
    ([_ok(due=-1e300)], "'x'", "due", "within 1e+12 s of 0"),
    ([_ok(due=10**400)], "'x'", "due", "within 1e+12 s of 0"),
    ([_ok(arrival=2e12)], "'x'", "arrival", "within 1e+12 s of 0"),
    # ids: compared with surrounding white space stripped, returned as given
    ([_ok(id="a"), _ok(id="a  ")], "'a  '", "id", "duplicate id (task #1 is 'a'"),
    ([_ok(id=" b"), _ok(id="b\t")], "'b\\t'", "id", "duplicate id"),
    ([_ok(id=1), _ok(id=1.0)], "1.0", "id", "duplicate id (also task #1)"),
    ([_ok(id="   ")], "'   '", "id", "empty"),
    ([_ok(id="")], "''", "id", "empty"),
    ([_ok(id=float("nan"))], "nan", "id", "not a finite number"),
    ([_ok(id=np.float64("inf"))], "inf", "id", "not a finite number"),
    ([_ok(id="x" * 10_000, estimate_s=-1)], "'xxxxxxxx", "estimate_s", "> 0"),
]


@pytest.mark.parametrize("tasks, who, field, why", BAD)
def test_bad_input_names_the_task_and_field(tmp_path, tasks, who, field, why):
    with pytest.raises(RankInputError) as exc:
        rank(tasks, now=0.0, config=conf(tmp_path))
    msg = str(exc.value)
    assert isinstance(exc.value, ValueError)
    assert len(msg) < 400 and "\n" not in msg, msg
    assert who in msg and why in msg, msg
    assert field is None or f"field {field}:" in msg, msg


@pytest.mark.parametrize(
    "kw, what",
    [
        ({"machines": 0}, "machines"),
        ({"machines": 1.5}, "machines"),
        ({"machines": []}, "machines"),
        ({"machines": "2x0"}, "machines item 1"),
        ({"machines": "two"}, "machines item 1"),
        ({"machines": [0.0, "soon"]}, "machines[1]"),
        ({"now": float("inf")}, "now"),
        ({"now": "yesterday"}, "now"),
        ({"now": "2026-05-09T12:00:00"}, "no time zone"),
    ],
)
def test_bad_arguments_are_refused(tmp_path, kw, what):
    with pytest.raises(RankInputError, match=what.replace("[", r"\[").replace("]", r"\]")):
        rank([_ok()], **{"now": 0.0, **kw}, config=conf(tmp_path))


def test_ids_are_returned_as_given(tmp_path):
    tasks = [_ok(id=" a ", estimate_s=50.0), _ok(id="b\n", estimate_s=10.0), _ok(id=7, estimate_s=5.0)]
    assert rank(tasks, now=0.0, policy="spt", config=conf(tmp_path)) == [7, "b\n", " a "]


def test_machines_beyond_the_limit_are_refused_before_allocating(tmp_path):
    from sched.limits import MAX_MACHINES

    tasks = [_ok()]
    assert rank(tasks, now=0.0, machines=MAX_MACHINES, config=conf(tmp_path)) == ["x"]
    assert rank(tasks, now=0.0, machines=[0.0] * MAX_MACHINES, config=conf(tmp_path)) == ["x"]
    over = MAX_MACHINES + 1
    for machines, what in (
        (10**9, "1000000000 GPUs"),
        (1e300, "1e+300 GPUs"),
        (over, f"{over} GPUs"),
        ([0.0] * over, f"a list of {over} free times"),
        ((0.0 for _ in range(10**9)), f"more than {MAX_MACHINES} free times"),
    ):
        with pytest.raises(RankInputError) as exc:
            rank(tasks, now=0.0, machines=machines, config=conf(tmp_path))
        assert str(exc.value) == (
            f"machines: {what}, more than the limit of {MAX_MACHINES} GPUs (sched.limits.MAX_MACHINES)"
        )


def test_more_tasks_than_the_limit_are_refused_before_reading(tmp_path):
    from sched.limits import MAX_RANK_TASKS

    n = MAX_RANK_TASKS + 1
    for tasks in ([_ok()] * n, pd.DataFrame({"id": range(n)})):
        with pytest.raises(RankInputError) as exc:
            rank(tasks, now=0.0, config=conf(tmp_path))
        assert str(exc.value) == (
            f"tasks: {n} tasks, more than the limit of {MAX_RANK_TASKS} (sched.limits.MAX_RANK_TASKS)"
        )


def test_a_plan_that_would_overflow_is_refused(tmp_path):
    # Before: two estimates of 1e308 gave an end of inf (Infinity or null in the CLI's JSON).
    huge = [_ok(id="a", estimate_s=6e11), _ok(id="b", estimate_s=6e11)]
    with pytest.raises(RankInputError, match=r"^tasks: the plan could end at 1\.2e\+12 s .*MAX_SECONDS"):
        rank(huge, now=0.0, explain=True, config=conf(tmp_path))
    with pytest.raises(RankInputError, match="plan could end"):
        rank(huge[:1], now=0.0, machines=[5e11], config=conf(tmp_path))
    # up to the limit every number of the plan is finite
    edge = [_ok(id="a", estimate_s=5e11, due=-1e12), _ok(id="b", estimate_s=5e11, due=1e12)]
    table = rank(edge, now=0.0, explain=True, config=conf(tmp_path))
    numbers = table[["start_s", "end_s", "lateness_s", "tardiness_s"]].to_numpy()
    assert np.isfinite(numbers).all() and table.end_s.max() == 1e12


def test_tasks_must_be_a_list_or_a_frame(tmp_path):
    for bad in ("tasks", {"id": 1}, 3):
        with pytest.raises(RankInputError):
            rank(bad, config=conf(tmp_path))


# --------------------------------------------------------------------------- package and CLI


def test_import_sched_stays_light_and_rank_is_the_function():
    code = (
        "import sys, sched; heavy = {'numba', 'pandas', 'torch'} & set(sys.modules); "
        "import sched.ranking.ranker; from sched import rank; import types; "
        "print(sorted(heavy), isinstance(rank, types.FunctionType))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True"]


def _cli_queue(tmp_path):
    tasks = [dict(t, id=t["id"]) for t in static_queue(seed=14, n=12)]
    path = tmp_path / "queue.json"
    path.write_text(json.dumps(tasks))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(conf(tmp_path)))  # JSON is YAML
    return tasks, path, cfg


def test_cli_prints_the_order_and_the_plan(tmp_path):
    tasks, path, cfg = _cli_queue(tmp_path)
    c = conf(tmp_path)
    out = run_here("--config", cfg, "rank", path, "--now", NOW, "--machines", 2)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == rank(tasks, now=NOW, machines=2, config=c)

    out = run_here(
        "--config",
        cfg,
        "rank",
        "-",
        "--now",
        NOW,
        "--policy",
        "edd",
        "--machines",
        f"{NOW + 300},{NOW - 1}",
        "--explain",
        input=path.read_text(),
    )
    assert out.returncode == 0, out.stderr
    records = json.loads(out.stdout)
    table = rank(tasks, now=NOW, policy="edd", machines=[NOW + 300, NOW - 1], explain=True, config=c)
    assert [r["id"] for r in records] == table.id.tolist()
    assert records[0].keys() == set(table.columns)
    assert records[0]["policy"] == "edd" and records[0]["atc_k"] is None
    assert [r["start_s"] for r in records] == table.start_s.tolist()

    out = run_here(
        "--config",
        cfg,
        "rank",
        path,
        "--now",
        "2026-05-09T12:00:00+00:00",
        "--machines",
        "2026-05-09T12:10:00Z,",
        "--explain",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["start_at"] == "2026-05-09T12:10:00+00:00"


@pytest.mark.parametrize(
    "args, stdin, needle",
    [
        (["-"], '[{"id": "a", "estimate_s": -3, "weight": 1, "due": 0}]', "'a': field estimate_s"),
        (["-"], "[{", "not valid JSON"),
        (["-"], '{"id": "a"}', "JSON list"),
        (["-", "--machines", "two"], "[]", "--machines"),
        (["-", "--policy", "fastest"], "[]", "unknown policy"),
        (["no-such-file.json"], None, "not found"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, args, stdin, needle):
    _, _, cfg = _cli_queue(tmp_path)
    out = run_here("--config", cfg, "rank", *args, input=stdin)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], out.stderr


def test_cli_empty_queue(tmp_path):
    _, _, cfg = _cli_queue(tmp_path)
    out = run_here("--config", cfg, "rank", input="[]")
    assert out.returncode == 0 and json.loads(out.stdout) == []


# --------------------------------------------------------------------------- hostile input
# The probing cases of issue 13 through `sched rank`, each in a subprocess
# under a memory cap: one line, exit status 2, the field or file named.


def _hostile(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(conf(tmp_path)))
    return cfg


def _task(**kw):
    return dict({"id": "a", "estimate_s": 30, "weight": 1, "due": 100}, **kw)


@pytest.mark.parametrize(
    "args, stdin, needles",
    [
        (["--machines", "1000000000"], [_task()], ["machines: 1000000000 GPUs", "MAX_MACHINES"]),
        (["--machines", ",".join(["0"] * 10_001)], [_task()], ["a list of 10001 free times"]),
        ([], [_task(estimate_s=1e308)], ["task 'a': field estimate_s", "MAX_SECONDS"]),
        ([], [_task(due=-1e300)], ["task 'a': field due", "MAX_SECONDS"]),
        ([], [_task(id="b", estimate_s=6e11), _task(estimate_s=6e11)], ["plan could end"]),
        (["--explain"], [_task(id="b", estimate_s=1e308), _task(estimate_s=1e308)], ["estimate_s"]),
        ([], [_task(), _task(id="a  ")], ["task 'a  ': field id: duplicate id"]),
        ([], '[{"id": "a", "estimate_s": NaN, "weight": 1, "due": 0}]', ["standard input", "NaN"]),
        ([], '[{"id": "a", "estimate_s": Infinity, "weight": 1, "due": 0}]', ["Infinity"]),
        ([], '[{"id": "a", "estimate_s": 1' + "0" * 400 + ', "weight": 1, "due": 0}]', ["estimate_s"]),
        ([], '[{"id": "a", "estimate_s": 1' + "0" * 5000 + ', "weight": 1, "due": 0}]', ["not valid JSON"]),
        ([], "[" * 100_000, ["standard input: not valid JSON: nested more than"]),
    ],
)
def test_hostile_cli_input_is_one_line(tmp_path, args, stdin, needles):
    from .test_hostile_input import assert_one_line_error, probe

    cfg = _hostile(tmp_path)
    text = stdin if isinstance(stdin, str) else json.dumps(stdin)
    code, out, err = probe("--config", cfg, "rank", "-", *args, cwd=tmp_path, input=text)
    assert_one_line_error(code, err, *needles)
    assert out == ""


def test_hostile_files_are_one_line(tmp_path):
    from sched.limits import MAX_RANK_BYTES, MAX_RANK_TASKS

    from .test_hostile_input import assert_one_line_error, probe

    cfg = _hostile(tmp_path)
    (tmp_path / "deep.json").write_text("[" * 100_000)
    code, _, err = probe("--config", cfg, "rank", "deep.json", cwd=tmp_path)
    assert_one_line_error(code, err, "deep.json: not valid JSON: nested more than")

    n = MAX_RANK_TASKS + 1
    (tmp_path / "many.json").write_text(json.dumps([_task(id=i) for i in range(n)]))
    code, _, err = probe("--config", cfg, "rank", "many.json", cwd=tmp_path)
    assert_one_line_error(code, err, f"tasks: {n} tasks", "MAX_RANK_TASKS")

    big = "[" + " " * MAX_RANK_BYTES + "]"
    code, _, err = probe("--config", cfg, "rank", cwd=tmp_path, input=big)
    assert_one_line_error(code, err, "standard input: more than the limit", "MAX_RANK_BYTES")
    (tmp_path / "big.json").write_text(big)
    code, _, err = probe("--config", cfg, "rank", "big.json", cwd=tmp_path)
    assert_one_line_error(code, err, "big.json: more than the limit", "MAX_RANK_BYTES")

    (tmp_path / "folder.json").mkdir()
    code, _, err = probe("--config", cfg, "rank", "folder.json", cwd=tmp_path)
    assert_one_line_error(code, err, "folder.json: is a folder")


def test_hostile_policy_files_are_one_line(tmp_path):
    import torch

    from .test_hostile_input import assert_one_line_error, probe
    from .test_policy_file import write_policy

    cfg = _hostile(tmp_path)
    good = write_policy(tmp_path / "good.pt", "scorer", 64)  # loads: tests/test_policy_file.py
    queue = json.dumps([_task(id=i) for i in range(5)])

    def crafted(name, edit):
        blob = torch.load(good, weights_only=True)
        edit(blob)
        torch.save(blob, tmp_path / name)
        return name

    cases = [
        (crafted("wide.pt", lambda b: b["meta"]["arch"].update(hidden=12000)), "meta.arch.hidden"),
        (crafted("text.pt", lambda b: b["meta"].update(arch="scorer")), "meta.arch"),
        (
            crafted("nan.pt", lambda b: b["state_dict"]["actor.2.weight"].fill_(float("nan"))),
            "actor.2.weight",
        ),
    ]
    for name, field in cases:
        code, out, err = probe("--config", cfg, "rank", "--policy-file", name, cwd=tmp_path, input=queue)
        assert_one_line_error(code, err, name, field)
        assert out == ""


def test_sched_rank_explain_starts_tasks_when_sched_simulate_does(tmp_path, distinct_policy):
    """The same queue (all arrived) as a scenario file: `sched simulate --policy ppo` and
    `sched rank --explain` run the same compiled decision and give the same start times."""
    tasks = static_queue(seed=4, n=60)
    arr, est, _, w, due = columns(tasks)
    sc = tmp_path / "queue.csv"
    pd.DataFrame(
        {
            "id": [t["id"] for t in tasks],
            "kind": "image",
            "arrival_s": arr,
            "duration_s": est,
            "estimate_s": est,
            "weight": w,
            "due_s": due,
        }
    ).to_csv(sc, index=False)
    sim_out = tmp_path / "sim.csv"
    r = run_here(
        "simulate", "--policy", "ppo", "--policy-file", distinct_policy, "--scenario", sc, "--out", sim_out
    )
    assert r.returncode == 0, r.stderr
    sim = pd.read_csv(sim_out).set_index("id")["start_s"]
    r = run_here(
        "rank", "--now", NOW, "--policy", distinct_policy, "--explain", input=json.dumps(tasks), cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    plan = {row["id"]: row["start_s"] for row in json.loads(r.stdout)}
    assert len(plan) == len(tasks) and all(plan[t["id"]] == sim[t["id"]] for t in tasks)
    ((atc, _, _),) = core.simulate_batch([columns(tasks)], "atc", k=2.0)
    assert any(plan[t["id"]] != a for t, a in zip(tasks, atc))  # the learned part counts


_ZONE_SCRIPT = """
import json, sys, time
from sched import rank
cfg = json.loads(sys.argv[1])
# across the spring-forward night of Paris (2026-03-29: 02:00 -> 03:00 local)
dst = [
    {"id": "a", "estimate_s": 3600, "weight": 1, "due": "2026-03-29T03:30:00"},
    {"id": "b", "estimate_s": 1800, "weight": 2, "due": "2026-03-29T02:30:00"},
    {"id": "c", "estimate_s": 600, "weight": 1, "due": "2026-03-29T01:45:00"},
]
plan = rank(dst, now="2026-03-29T01:30:00", policy="atc", explain=True, config=cfg)
# without now: the current time
soon = [{"id": "x", "estimate_s": 60, "weight": 1, "due": "2000-01-01T00:00:00"}]
t = time.time()
late = rank(soon, policy="atc", explain=True, config=cfg)
print(json.dumps({"ids": plan.id.tolist(), "late": plan.lateness_s.tolist(),
                  "start": plan.start_s.tolist(), "end_at": [str(x) for x in plan.end_at],
                  "now_off": float(late.start_s.iloc[0] - t)}))
"""


def test_naive_datetimes_are_utc_whatever_the_machine_zone(tmp_path):
    """Issue 23, item 10: naive datetimes (no offset) are read in UTC, never on the machine's
    local clock. The same calls under TZ=Europe/Paris (across its DST change) and TZ=UTC give
    the same plan, the lateness of UTC arithmetic, and the current time as UTC."""
    out = {}
    for zone in ("UTC", "Europe/Paris", "America/New_York"):
        env = dict(os.environ, TZ=zone, PYTHONPATH=str(ROOT))
        r = subprocess.run(
            [sys.executable, "-c", _ZONE_SCRIPT, json.dumps(conf(tmp_path))],
            capture_output=True, text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        out[zone] = json.loads(r.stdout)
    for zone, got in out.items():
        assert abs(got.pop("now_off")) < 30, zone  # the default now is the current UTC time
    assert out["UTC"] == out["Europe/Paris"] == out["America/New_York"]
    utc = out["UTC"]
    t0 = (datetime(2026, 3, 29, 1, 30) - datetime(1970, 1, 1)).total_seconds()
    assert utc["start"][0] == t0  # 01:30 read as 01:30 UTC
    assert utc["ids"] == ["c", "b", "a"] and utc["late"] == [-300.0, -1200.0, -1200.0]
    assert utc["end_at"] == ["2026-03-29 01:40:00", "2026-03-29 02:10:00", "2026-03-29 03:10:00"]
