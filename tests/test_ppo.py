"""PPO: training, the policy file, resume, the scorer (the Gymnasium environment: test_gym_env.py)."""

import contextlib
import json

import numpy as np
import pandas as pd
import pytest
import torch

from sched.data.scenario import generate, scenario_model
from sched.errors import SchedError
from sched.learn.chain import train
from sched.learn.policy import features as F
from sched.learn.policy import networks as P
from sched.learn.policy import policy_file as PF
from sched.learn.settings import Training
from sched.sim import core

from .conftest import AGREEMENT_CASES, AGREEMENT_TASKS
from .conftest import TINY_TRAIN as TINY


@pytest.fixture(scope="module")
def trained(tiny_policy):
    return tiny_policy


def test_training_writes_a_loadable_policy_and_log(trained):
    out, summary = trained
    assert out.exists() and not out.with_name(out.name + ".ckpt").exists()
    log = pd.read_csv(out.with_name("train_log.csv"))
    # iteration -1 is the untrained network (ATC prior), 0 the teacher warm start, then PPO
    assert list(log["iteration"]) == list(range(-1, TINY["iterations"] + 1))
    ppo = log[log["iteration"] > 0]
    for col in (
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_fraction",
        "explained_variance",
    ):
        assert ppo[col].notna().all(), col
    # how fast it ran is the run record's, beside the log, not the log's (issue 45)
    run = pd.read_csv(out.with_name("train_log.run.csv"))
    assert list(run.columns) == ["iteration", "steps_per_s", "collect_s", "update_s", "wall_s"]
    assert not {"steps_per_s", "wall_s"} & set(log.columns)
    assert list(run["iteration"]) == list(log["iteration"])
    assert (run.loc[run["iteration"] > 0, "steps_per_s"] > 0).all()
    assert (ppo["entropy"] > 0).all() and (ppo["env_steps"].diff().dropna() == 32).all()
    assert log["val_weighted_tardiness_s"].notna().sum() == 4  # iterations -1, 0, 3 and 6
    pol = PF.load(out)
    assert pol.meta["arch"]["name"] == "scorer" and pol.meta["best_iteration"] in (-1, 0, 3, 6)
    val = log.set_index("iteration")["val_weighted_tardiness_s"].dropna()
    assert pol.meta["val_weighted_tardiness_s"] == pytest.approx(val.min())  # the best is kept


def test_greedy_policy_is_deterministic_and_feasible(trained, tiny_cfg):
    out, _ = trained
    pol = PF.load(out)
    from sched.learn.policy.kernel import run as run_greedy

    scs = [generate(scenario_model(tiny_cfg), s, tasks=80, machines=2).arrays for s in range(3)]
    a = run_greedy(pol, scs, machines=2)
    b = run_greedy(pol, scs, machines=2)
    for (s1, e1, m1), (s2, _e2, m2), sc in zip(a, b, scs):
        assert np.array_equal(s1, s2) and np.array_equal(m1, m2)
        assert (s1 >= sc[0]).all() and np.allclose(e1 - s1, sc[1])
        for m in range(2):
            order = np.argsort(s1[m1 == m])
            assert (s1[m1 == m][order][1:] >= e1[m1 == m][order][:-1]).all()


def test_simulate_with_ppo_policy_file(trained, tmp_path, cli):
    out, _ = trained
    r = cli("simulate", "--policy", "ppo", "--policy-file", out, "--seed", 5, 6, "--out", tmp_path / "sched")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    for line in lines:
        sched = pd.read_csv(tmp_path / "sched" / f"{line['scenario']}.csv")
        assert sched["weighted_tardiness_s"].sum() == pytest.approx(line["total_weighted_tardiness_s"])
    r2 = cli("simulate", "--policy", "ppo", "--policy-file", out, "--seed", 5, 6)
    assert r2.stdout == r.stdout  # replayable


def test_resume_gives_the_same_trained_weights(tmp_path, tiny_cfg):
    # eval_every 0: the policy file holds the last iteration's weights, which PPO
    # moved away from the start (checked below), so the comparison is of
    # trained weights, not of an untrained network kept as the best one
    args = Training.of(seed=3, **{**TINY, "eval_every": 0})
    ref = tmp_path / "ref" / "politique.pt"
    train(tiny_cfg, args, ref, progress=False)
    # the same run, killed right after its checkpoint of iteration 4 ...
    full = tmp_path / "full" / "politique.pt"
    _train_until_checkpoint(tiny_cfg, args, full, stop_after=4)
    ckpt = full.with_name(full.name + ".ckpt")
    assert ckpt.exists()
    at_4 = torch.load(ckpt, weights_only=True)["net"]
    # a kill -9 while writing leaves temporaries beside the outputs: the resumed run removes them
    stale = [full.with_name(".train_log.csv.x1.tmp"), full.with_name(".politique.pt.ckpt.x2.tmp")]
    for s in stale:
        s.write_text("half")
    # ... then run again: it resumes at iteration 5
    said = []
    train(tiny_cfg, args, full, progress=False, log=said.append)
    assert said == [f"resuming {full} from iteration 4"]
    assert not ckpt.exists() and not any(s.exists() for s in stale)
    a, b = torch.load(ref, weights_only=True), torch.load(full, weights_only=True)
    assert a["meta"]["best_iteration"] == b["meta"]["best_iteration"] == TINY["iterations"]
    assert any(not torch.equal(a["state_dict"][k], at_4[k]) for k in at_4)  # PPO moved them after 4
    for k in a["state_dict"]:
        assert torch.equal(a["state_dict"][k], b["state_dict"][k]), k
    # the log holds no timing (its run record does): a resumed run writes the same bytes
    assert ref.with_name("train_log.csv").read_bytes() == full.with_name("train_log.csv").read_bytes()


class _Stop(Exception):
    pass


class _Payload:
    """Unpickling this runs code: it creates the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _train_until_checkpoint(cfg, args, out, stop_after):
    """Run training and kill it right after the checkpoint of iteration ``stop_after``.

    It stops once that checkpoint is in place (renamed onto ``<out>.ckpt``), not
    while it is being written: an exception inside the atomic write throws the
    new checkpoint away and leaves the previous one.
    """
    import sched.learn.ppo.checkpoint as ck

    real_save, real_atomic = torch.save, ck.atomic_path
    saved = []

    def save(obj, f, *a, **k):
        real_save(obj, f, *a, **k)
        if isinstance(obj, dict) and "optimizer" in obj:
            saved.append(obj["iteration"])

    @contextlib.contextmanager
    def atomic_then_stop(path):
        with real_atomic(path) as tmp:
            yield tmp
        if saved and saved.pop() == stop_after:
            raise _Stop

    ck.torch.save, ck.atomic_path = save, atomic_then_stop
    try:
        with pytest.raises(_Stop):
            train(cfg, args, out, progress=False)
    finally:
        ck.torch.save, ck.atomic_path = real_save, real_atomic


def test_bad_policy_files_are_refused(tmp_path, trained, cli):
    out, _ = trained
    with pytest.raises(PF.PolicyFileError, match="not found"):
        PF.load(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(PF.PolicyFileError, match="not a readable policy file"):
        PF.load(junk)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(PF.PolicyFileError, match="format field missing"):
        PF.load(other)
    blob = torch.load(out, weights_only=True)
    blob["state_dict"]["embed.0.weight"] = torch.zeros(2, 2)
    bad = tmp_path / "bad_weights.pt"
    torch.save(blob, bad)
    with pytest.raises(PF.PolicyFileError, match="weights do not fit"):
        PF.load(bad)
    for key in ("task_features", "global_features"):
        blob = torch.load(out, weights_only=True)
        blob["meta"][key] = list(reversed(blob["meta"][key]))  # same size, other order
        moved = tmp_path / f"moved_{key}.pt"
        torch.save(blob, moved)
        with pytest.raises(PF.PolicyFileError, match=f"trained on other {key}"):
            PF.load(moved)

    marker = tmp_path / "payload-ran"
    evil = tmp_path / "evil.pt"
    blob = torch.load(out, weights_only=True)
    blob["meta"]["note"] = _Payload(marker)  # a well-formed policy file, plus a payload
    torch.save(blob, evil)
    with pytest.raises(PF.PolicyFileError):
        PF.load(evil)  # weights_only refuses to unpickle arbitrary objects
    assert not marker.exists()  # and the payload never ran
    r = cli("simulate", "--policy", "ppo", "--policy-file", junk, "--seed", 1)
    assert r.returncode == 2 and "junk.pt" in r.stderr


def test_scorer_is_permutation_equivariant():
    """Permuting the candidates permutes their scores; the context's value does not move."""
    torch.manual_seed(0)
    net = P.TaskScorer(hidden=16, top_k=0).eval()
    q = 9
    x = torch.randn(1, q, F.N_TASK)
    c = torch.randn(1, 2 * F.N_TASK + F.N_GLOBAL)
    mask = torch.ones(1, q, dtype=torch.bool)
    perm = torch.randperm(q)
    with torch.no_grad():
        s1, v1 = net.forward_compact(x, c, mask)
        s2, v2 = net.forward_compact(x[:, perm], c, mask)
    assert torch.allclose(s1[0, perm], s2[0], atol=1e-6) and torch.allclose(v1, v2, atol=1e-6)
    assert not torch.allclose(s1, s1[:, perm])  # the scores do depend on the task


def test_scorer_works_for_any_candidate_count_and_batches_agree():
    """Decisions of 1, 5 and 300 candidates in one padded batch score as each alone."""
    torch.manual_seed(1)
    net = P.TaskScorer(hidden=16, top_k=0).eval()
    sizes = [1, 5, 300]
    x = torch.randn(3, 300, F.N_TASK)
    c = torch.randn(3, 2 * F.N_TASK + F.N_GLOBAL)
    mask = torch.arange(300).unsqueeze(0) < torch.tensor(sizes).unsqueeze(1)
    with torch.no_grad():
        logits, values = net.forward_compact(x, c, mask)
        for i, n in enumerate(sizes):
            li, vi = net.forward_compact(x[i : i + 1, :n], c[i : i + 1], mask[i : i + 1, :n])
            assert torch.allclose(logits[i, :n], li[0], atol=1e-5)
            assert torch.allclose(values[i], vi[0], atol=1e-5)
            assert (logits[i, n:] == -1e9).all()


def test_the_flat_architecture_is_refused_naming_the_field(tmp_path, tiny_cfg):
    args = Training.of(seed=5, architecture="flat", **{**TINY, "eval_every": 0, "teacher_scenarios": 0})
    with pytest.raises(SchedError, match="train.architecture: expected scorer, got 'flat'"):
        train(tiny_cfg, args, tmp_path / "flat.pt", progress=False)


def test_privileged_hint_is_the_atc_cost_to_go(tiny_cfg):
    """The critic's hint plus the tardiness accrued so far is ATC's total from that state."""
    from sched.config import seed_range
    from sched.learn.env.vec_env import VecQueue

    env = VecQueue(
        tiny_cfg, 3, np.random.default_rng(0), seed_range(tiny_cfg, "train"), "tasks", 2.0, privileged=True
    )
    env.reset()
    hint = env.value_hint()
    s = env.state
    for b in range(3):
        d = __import__("sched.data.scenario", fromlist=["draw"]).draw(
            scenario_model(tiny_cfg), int(env.slot_seed[b])
        )
        arrays = (d["arrival"], d["duration"], d["estimate"], d["weight"], d["due"])
        ((_, end, _),) = core.simulate_batch([arrays], "atc", k=2.0)
        total = float((arrays[3] * np.maximum(end - arrays[4], 0)).sum())
        # at the first decision every earlier one was forced, so ATC's schedule got here too
        assert -hint[b] / 0.001 + s.wt_prev[b] == pytest.approx(total, rel=1e-6)


def test_one_queue_fast_path_matches_the_batched_greedy(distinct_policy, tiny_cfg):
    # distinct_policy schedules each of these cases unlike ATC (its fixture
    # asserts it), so the correction network's part of the score is tested too
    from sched.learn.policy.kernel import run as run_greedy
    from sched.learn.policy.kernel import run_one as run_greedy_one

    pol = PF.load(distinct_policy)
    for seed, machines, free in AGREEMENT_CASES:
        sc = generate(scenario_model(tiny_cfg), seed, tasks=AGREEMENT_TASKS, machines=machines).arrays
        a = run_greedy_one(pol, sc, machines, free)
        (b,) = run_greedy(pol, [sc], machines, free)
        for u, v in zip(a, b):
            assert np.array_equal(u, v)


def _late_cfg(cfg, tasks):
    """Deadlines shorter than the tasks: tardiness accrues before the first choice too."""
    c = cfg.replace(scenario={"tasks": tasks})
    c = c.replace(scenario={"due": {"flow_factor": [0.1, 0.2], "slack_s": [0.0, 0.0]}})
    return c


def test_vec_queue_episode_rewards_sum_to_its_total_weighted_tardiness(cfg):
    from sched.config import seed_range
    from sched.learn.env.vec_env import VecQueue

    c = _late_cfg(cfg, 30)
    env = VecQueue(c, 2, np.random.default_rng(4), seed_range(c, "train"), "tasks", 2.0)
    env.reset()
    assert (env._before_first > 0).any()  # the case this test is about
    ret, seen = np.zeros(2), 0
    while seen < 6:
        n_before, playing = len(env.finished), env.slot_seed.copy()
        _, r, done = env.step(np.zeros(2, dtype=np.int64))
        ret += r
        totals = {seed: total for seed, _, total in env.finished[n_before:]}
        for b in np.flatnonzero(done):
            assert ret[b] == pytest.approx(-0.001 * totals[int(playing[b])], rel=1e-5)
            ret[b] = 0.0
            seen += 1


def _interrupted_run(tmp_path, tiny_cfg):
    args = Training.of(seed=3, **{**TINY, "iterations": 4, "eval_every": 0})
    out = tmp_path / "run" / "politique.pt"
    _train_until_checkpoint(tiny_cfg, args, out, stop_after=2)
    return args, out, out.with_name(out.name + ".ckpt")


def test_a_checkpoint_with_a_payload_is_refused_without_running_it(tmp_path, tiny_cfg):
    from sched.learn.ppo.checkpoint import CheckpointError

    args, out, ckpt = _interrupted_run(tmp_path, tiny_cfg)
    ck = torch.load(ckpt, weights_only=True)
    marker = tmp_path / "payload-ran"
    ck["rows"].append(_Payload(marker))
    torch.save(ck, ckpt)
    with pytest.raises(CheckpointError, match=r"politique\.pt\.ckpt: not a readable checkpoint"):
        train(tiny_cfg, args, out, progress=False)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "other-shapes"])
def test_a_damaged_or_foreign_checkpoint_is_one_error(tmp_path, tiny_cfg, damage):
    args, out, ckpt = _interrupted_run(tmp_path, tiny_cfg)
    if damage == "garbage":
        ckpt.write_bytes(b"not a checkpoint at all")
    elif damage == "truncated":
        ckpt.write_bytes(ckpt.read_bytes()[:500])
    elif damage == "foreign":
        torch.save({"weights": torch.zeros(3)}, ckpt)
    else:
        ck = torch.load(ckpt, weights_only=True)
        first = next(iter(ck["net"]))
        ck["net"][first] = torch.zeros(1)
        torch.save(ck, ckpt)
    from sched.learn.ppo.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="politique.pt.ckpt"):
        train(tiny_cfg, args, out, progress=False)


def test_the_loop_refuses_a_warm_start_its_settings_do_not_ask_for_and_one_missing(tiny_cfg, tmp_path):
    from sched.learn.ppo import loop

    out = tmp_path / "p.pt"
    with pytest.raises(loop.TrainSettingsError, match="train.teacher_scenarios is 3 and no warm start"):
        loop.train(tiny_cfg, Training.of(seed=1, **TINY), out, progress=False)
    no_teacher = Training.of(seed=1, **dict(TINY, teacher_scenarios=0))
    with pytest.raises(loop.TrainSettingsError, match="train.teacher_scenarios is 0 and a warm start"):
        loop.train(tiny_cfg, no_teacher, out, progress=False, warm_start=lambda net, gen, progress: 0.0)
    assert not out.exists()


def test_the_patience_rule_counts_checks_since_the_best_and_a_better_check_resets_it():
    from sched.learn.ppo.loop import checks_since_best

    nan = float("nan")
    rows = [
        {"iteration": i, "val_weighted_tardiness_s": v} for i, v in enumerate([10.0, nan, 9.0, nan, 9.5, 9.2])
    ]
    assert checks_since_best(rows, 2) == 2  # iterations 4 and 5 validated, neither better than 2's
    assert checks_since_best(rows, 5) == 0  # a new best: nothing since
    assert checks_since_best(rows, 0) == 3  # rows without a check (nan) do not count


def test_ppo_stops_once_its_validation_curve_stops_improving_and_says_so(tiny_cfg, tmp_path):
    # a learning rate too small to change a greedy decision: every check ties the start, none is
    # better, so PPO stops after `patience` checks instead of running to its cap
    from sched.learn.ppo import loop

    out = tmp_path / "p.pt"
    args = Training.of(
        seed=1,
        **dict(TINY, teacher_scenarios=0, learning_rate=1e-12, eval_every=1, patience=2, iterations=40),
    )
    said = []
    summary = loop.train(tiny_cfg, args, out, progress=False, log=said.append)
    log = pd.read_csv(out.with_name("train_log.csv"))
    assert summary["iterations"] == 2 and list(log["iteration"]) == [0, 1, 2]
    assert any("stopped at iteration 2 of 40: 2 validation check(s) in a row" in s for s in said)
    assert PF.load(out).meta["best_iteration"] == 0 and PF.load(out).meta["train_args"]["patience"] == 2
    # without the rule, the cap is the run's length
    full = loop.train(tiny_cfg, args.replace(patience=0, iterations=4), tmp_path / "q.pt", progress=False)
    assert full["iterations"] == 4
