"""The warm starts (ppo-<S>-warm) and the report's training sections, from small fake inputs:
PPO's vital signs, the training throughput, PPO's share of the gain, PPO alone, and the
diagnostics panel of the learning-curve figure."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sched import layout
from sched.errors import SchedError
from sched.evaluate.per_scenario import matrix, read_per_scenario, sort_frame
from sched.evaluate.policies import (
    benchmark_policies,
    best_heuristic,
    default_policies,
    parse_policies,
    parse_policy_files,
    policy_key,
    resolve_policies,
)
from sched.evaluate.statistics import bootstrap_counts, paired_difference, win_tie_loss
from sched.learn.ppo import train_log
from sched.learn.ppo.train_log import LOG_COLUMNS
from sched.report import document as report
from sched.report.training import TARGETS, in_range, throughput, vital_signs
from sched.verdict.outputs import write_outputs
from sched.verdict.winner import choose_winner

from .conftest import run_here
from .test_benchmark import HEURISTICS, ok, tiny  # noqa: F401  (tiny: the shared fixture)

# --------------------------------------------------------------------------- naming


def test_warm_starts_are_named_after_their_seed_and_sorted_after_their_policy(cfg):
    names = parse_policies("ppo-2-warm,atc,ppo-2,fifo,ppo-1-warm,ppo-1", cfg)
    assert names == ["fifo", "atc", "ppo-1", "ppo-1-warm", "ppo-2", "ppo-2-warm"]
    assert sorted(["ppo-10", "ppo-2-warm", "ppo-2"], key=policy_key) == ["ppo-2", "ppo-2-warm", "ppo-10"]
    for bad in ("ppo-1-cold", "ppo-warm", "ppo-1warm"):
        with pytest.raises(SchedError, match="unknown policy"):
            parse_policies(f"atc,{bad}", cfg)
    files = parse_policy_files(["ppo-1=a.pt", "ppo-1-warm=b.pt"])
    assert files == {"ppo-1": Path("a.pt"), "ppo-1-warm": Path("b.pt")}
    with pytest.raises(SchedError, match="expected ppo-<seed>=PATH, ppo-<seed>-warm=PATH"):
        parse_policy_files(["ppo-1-tepid=b.pt"])


def test_a_warm_start_defaults_to_warm_start_pt_beside_the_policy_file(cfg, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for s in (1, 2):
        for path in (layout.policy_file(s), layout.warm_policy_file(s)):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(b"x")
    specs, _ = resolve_policies(cfg, ["ppo-1", "ppo-1-warm", "ppo-2-warm"])
    assert specs["ppo-1"]["policy_file"] == "results/train/seed-1/politique.pt"
    assert specs["ppo-1-warm"]["policy_file"] == "results/train/seed-1/warm_start.pt"
    assert specs["ppo-2-warm"]["policy_file"] == "results/train/seed-2/warm_start.pt"
    Path(layout.warm_policy_file(2)).unlink()
    with pytest.raises(SchedError, match=r"policy ppo-2-warm: .* with a teacher"):
        resolve_policies(cfg, ["ppo-2-warm"])


def test_the_benchmark_runs_the_warm_starts_by_default_only_with_a_teacher(cfg):
    seeds = cfg["train"]["seeds"]
    assert cfg["train"]["teacher_scenarios"] > 0
    assert benchmark_policies(cfg) == HEURISTICS.split(",") + [
        name for s in seeds for name in (f"ppo-{s}", f"ppo-{s}-warm")
    ]
    alone = cfg.replace(train={"teacher_scenarios": 0})
    assert (
        benchmark_policies(alone)
        == default_policies(alone)
        == HEURISTICS.split(",") + [f"ppo-{s}" for s in seeds]
    )


def test_a_warm_start_is_never_the_winner_nor_the_runner_up():
    rng = np.random.default_rng(0)
    base = rng.uniform(100.0, 200.0, 40)
    twt = {"fifo": base * 2, "atc": base, "ppo-1": base * 0.9, "ppo-1-warm": base * 0.5}
    counts = bootstrap_counts(40, 500, 1)
    specs = {"ppo-1": {"policy_file": "p.pt"}, "ppo-1-warm": {"policy_file": "w.pt"}}
    w = choose_winner(twt, specs, counts, 0.95)
    assert (w["policy"], w["runner_up"], w["policy_file"]) == ("ppo-1", "atc", "p.pt")
    # the warm start has the lowest mean, but is left out: the best of the others wins
    twt["ppo-1"] = base * 1.2
    w = choose_winner(twt, specs, counts, 0.95)
    assert w["policy"] == "atc" and w["runner_up"] == "ppo-1" and "ppo-1-warm" not in w["reason"]


def test_sched_benchmark_runs_the_warm_start_that_sched_train_wrote(tiny, tiny_policy, tmp_path):  # noqa: F811
    policy = tiny_policy[0]
    warm = policy.with_name(layout.WARM_POLICY_FILE)
    assert warm.is_file()  # written by the training, which had a teacher
    r = ok(
        run_here(
            "--config",
            tiny["conf"],
            "benchmark",
            "--policies",
            "ppo-3-warm,fifo,ppo-3,atc",
            "--tuned",
            tiny["tuned"],
            "--policy-file",
            f"ppo-3={policy}",
            "--policy-file",
            f"ppo-3-warm={warm}",
            "--out",
            tmp_path,
        )  # fmt: skip
    )
    per = pd.read_csv(tmp_path / "per_scenario.csv")
    assert list(dict.fromkeys(per["policy"])) == ["fifo", "atc", "ppo-3", "ppo-3-warm"]
    assert re.search(r"^ppo-3-warm\s+\d", r.stdout, re.M)
    summary = pd.read_csv(tmp_path / "resume.csv")
    assert set(summary["policy"]) == {"fifo", "atc", "ppo-3", "ppo-3-warm"}
    assert json.loads((tmp_path / "winner.json").read_text())["policy"] != "ppo-3-warm"


# --------------------------------------------------------------------------- training logs


def fake_log(seed, n=30):
    """A training log: the two starting rows (outlandish values the report must leave out),
    then ``n`` PPO iterations; seed 1 in the target ranges, seed 2 out of them."""
    rng = np.random.default_rng(seed)
    it = np.arange(1, n + 1)
    scale = 1.0 if seed == 1 else 10.0
    ppo = {c: rng.uniform(0.5, 1.5, n) for c in LOG_COLUMNS} | {
        "iteration": it,
        "env_steps": it * 32,
        "wall_s": it * 2.0,
        "approx_kl": 0.01 * scale * rng.uniform(0.5, 1.5, n),
        "clip_fraction": 0.05 * scale * rng.uniform(0.5, 1.5, n),
        "explained_variance": rng.uniform(-0.5, 0.9, n),
        "entropy": rng.uniform(1.0, 2.0, n),
        "steps_per_s": rng.uniform(400.0, 900.0, n),
        "collect_s": rng.uniform(0.1, 0.3, n),
        "update_s": rng.uniform(0.05, 0.2, n),
        "val_weighted_tardiness_s": np.where(it % 10 == 0, rng.uniform(2e4, 3e4, n), np.nan),
    }
    start = {c: [99.0, 99.0] for c in LOG_COLUMNS} | {"iteration": [-1, 0], "env_steps": [0, 0]}
    return pd.concat([pd.DataFrame(start), pd.DataFrame(ppo)], ignore_index=True)[list(LOG_COLUMNS)]


def test_vital_signs_and_throughput_are_computed_over_the_ppo_iterations():
    logs = {1: fake_log(1), 2: fake_log(2)}
    v, t = vital_signs(logs).set_index("seed"), throughput(logs).set_index("seed")
    for s, log in logs.items():
        p = log[log["iteration"] > 0]
        assert v.loc[s, "iterations"] == t.loc[s, "iterations"] == 30
        assert v.loc[s, "median_approx_kl"] == pytest.approx(np.median(p["approx_kl"]))
        assert v.loc[s, "mean_clip_fraction"] == pytest.approx(np.mean(p["clip_fraction"]))
        assert v.loc[s, "median_explained_variance"] == pytest.approx(np.median(p["explained_variance"]))
        assert v.loc[s, "mean_entropy"] == pytest.approx(np.mean(p["entropy"]))
        assert t.loc[s, "median_steps_per_s"] == pytest.approx(np.median(p["steps_per_s"]))
        c, u = p["collect_s"].sum(), p["update_s"].sum()
        assert (t.loc[s, "collect_s"], t.loc[s, "update_s"]) == pytest.approx((c, u))
        assert (t.loc[s, "collect_share"], t.loc[s, "update_share"]) == pytest.approx(
            (c / (c + u), u / (c + u))
        )
    assert v.loc[1, "kl_in_range"] and v.loc[1, "clip_in_range"]
    assert not v.loc[2, "kl_in_range"] and not v.loc[2, "clip_in_range"]


def test_the_target_ranges_are_closed_and_refuse_undefined_values():
    assert TARGETS == {"approx_kl": (0.002, 0.03), "clip_fraction": (0.02, 0.3)}
    assert in_range(0.002, TARGETS["approx_kl"]) and in_range(0.03, TARGETS["approx_kl"])
    assert not in_range(0.0301, TARGETS["approx_kl"]) and not in_range(0.0019, TARGETS["approx_kl"])
    assert not in_range(float("nan"), TARGETS["clip_fraction"])


def test_the_learning_curve_figure_has_a_diagnostics_panel_per_seed():
    from sched.report.figures import learning_curves_figure

    logs = {1: fake_log(1), 2: fake_log(2)}
    fig = learning_curves_figure(logs, targets=TARGETS)
    panels = {ax.get_title(): ax for ax in fig.axes}
    for column, title in (
        ("approx_kl", "approx_kl (log scale)"),
        ("clip_fraction", "clip_fraction"),
        ("entropy", "entropy"),
        ("explained_variance", "explained_variance"),
    ):
        ax = panels[title]
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert set(lines) == {"ppo-1", "ppo-2"}, title
        for s, log in logs.items():
            p = log[log["iteration"] > 0]
            assert list(lines[f"ppo-{s}"].get_xdata()) == list(p["iteration"])
            assert np.allclose(lines[f"ppo-{s}"].get_ydata(), p[column]), (title, s)
    assert panels["approx_kl (log scale)"].get_yscale() == "log"
    assert panels["clip_fraction"].get_yscale() == "linear"
    # the target range shaded on the approx_kl and clip_fraction panels
    lo, hi = TARGETS["clip_fraction"]
    (band,) = panels["clip_fraction"].patches
    assert np.allclose([band.get_bbox().y0, band.get_bbox().y1], [lo, hi])
    assert len(panels["approx_kl (log scale)"].patches) == 1
    assert not panels["entropy"].patches
    import matplotlib.pyplot as plt

    plt.close(fig)


# --------------------------------------------------------------------------- the report


def with_learned(per, bh, factors, seed):
    """The per-scenario table with synthetic learned policies: {name: factor} times ``bh``."""
    rng = np.random.default_rng(seed)
    frames = [per]
    for name, factor in factors.items():
        x = per[per.policy == bh].copy()
        x["policy"] = name
        x["total_weighted_tardiness_s"] *= factor * rng.uniform(0.98, 1.02, len(x))
        frames.append(x)
    return sort_frame(pd.concat(frames, ignore_index=True))


def row_cells(text, heading, first):
    section = text[text.index(heading) :]
    line = next(x for x in section.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.split("|")[1:-1]]


def numbers(cell):
    return [float(x.replace(",", "")) for x in re.findall(r"[-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?", cell)]


@pytest.fixture(scope="module")
def reported(tiny, tmp_path_factory):  # noqa: F811
    """A report on the tiny benchmark with synthetic ppo-1, ppo-1-warm, fake training logs
    and a PPO-alone robustness setting."""
    d = tmp_path_factory.mktemp("training-report")
    cfg = tiny["cfg"].replace(
        train={"seeds": [1, 2]},
        robustness={"settings": [{"name": "ppo-only", "train": {"teacher_scenarios": 0}}]},
    )
    per = read_per_scenario(tiny["bench"] / "per_scenario.csv")
    _, twt = matrix(per)
    bh = best_heuristic(twt)
    bench = d / "bench"
    shutil.copytree(tiny["bench"], bench)
    specs, _ = resolve_policies(cfg, HEURISTICS.split(","), tuned=bench / "tuned.json")
    learned = {"ppo-1": 0.85, "ppo-1-warm": 0.9, "ppo-2": 1.1, "ppo-2-warm": 0.95}
    for p in learned:  # a learned winner's file is hashed into winner.json: it must exist
        (d / f"{p}.pt").write_bytes(p.encode())
    specs_l = specs | {
        p: {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(d / f"{p}.pt")} for p in learned
    }
    write_outputs(bench, with_learned(per, bh, learned, 1), cfg, specs_l, full=True)
    alone = d / "robustness" / "ppo-only"
    write_outputs(alone, with_learned(per, bh, {"ppo-1": 1.2, "ppo-2": 0.8}, 2), cfg, specs_l, full=True)
    for s in (1, 2):
        (d / "train" / f"seed-{s}").mkdir(parents=True)
        # the log and its run record (the timing columns), as training writes them
        train_log.write(d / "train" / f"seed-{s}" / "train_log.csv", fake_log(s).to_dict("records"))
    out = d / "rapport.md"
    report.build(cfg, bench, out, d / "figures", d / "train", None, robust_dir=d / "robustness")
    return {"cfg": cfg, "bench": bench, "alone": alone, "text": out.read_text(), "dir": d}


def test_the_report_shows_each_seeds_vital_signs_and_whether_they_are_in_range(reported):
    text = reported["text"]
    for s in (1, 2):
        log = fake_log(s)
        p = log[log["iteration"] > 0]
        cells = row_cells(text, "### PPO vital signs", f"ppo-{s}")
        assert cells[1] == "30"
        assert numbers(cells[2])[0] == pytest.approx(np.median(p["approx_kl"]), rel=1e-3)
        assert numbers(cells[3])[0] == pytest.approx(np.mean(p["clip_fraction"]), rel=1e-3)
        assert numbers(cells[4])[0] == pytest.approx(np.median(p["explained_variance"]), abs=1e-3)
        assert numbers(cells[5])[0] == pytest.approx(np.mean(p["entropy"]), rel=1e-3)
        assert cells[6:] == (["yes", "yes"] if s == 1 else ["no", "no"])
    assert "Both in range for 1 of 2 seed(s)." in text


def test_the_report_shows_the_training_throughput(reported):
    for s in (1, 2):
        p = fake_log(s)[lambda f: f["iteration"] > 0]
        cells = row_cells(reported["text"], "### Training throughput", f"ppo-{s}")
        c, u = p["collect_s"].sum(), p["update_s"].sum()
        assert numbers(cells[2])[0] == pytest.approx(np.median(p["steps_per_s"]), abs=0.5)
        assert numbers(cells[3]) == pytest.approx([c, c / (c + u) * 100], abs=0.05)
        assert numbers(cells[4]) == pytest.approx([u, u / (c + u) * 100], abs=0.05)
    met = sum(np.median(fake_log(s)[lambda f: f["iteration"] > 0]["steps_per_s"]) >= 30_000 for s in (1, 2))
    assert f"At least 30,000 decisions/s (the goal) for {met} of 2 seed(s)." in reported["text"]


def test_ppos_share_of_the_gain_is_the_paired_difference_with_the_warm_start(reported):
    cfg, text = reported["cfg"], reported["text"]
    b = cfg["benchmark"]
    seeds, twt = matrix(read_per_scenario(reported["bench"] / "per_scenario.csv"))
    counts = bootstrap_counts(len(seeds), b["bootstrap_resamples"], b["bootstrap_seed"])
    summary = pd.read_csv(reported["bench"] / "resume.csv").set_index("policy")
    goal = []
    for s, effect in ((1, "improves"), (2, "worsens")):
        d, lo, hi = paired_difference(twt[f"ppo-{s}"], twt[f"ppo-{s}-warm"], counts, b["ci_level"])
        w, t, loss = win_tie_loss(
            twt[f"ppo-{s}"], twt[f"ppo-{s}-warm"], b["tie_relative"], b["tie_absolute_s"]
        )
        cells = row_cells(text, "### PPO's share of the gain", str(s))
        assert numbers(cells[3]) == pytest.approx([d, lo, hi], abs=0.005)
        assert cells[4] == f"{w}/{t}/{loss}" and cells[5] == effect
        goal.append(d <= -2.0 and hi < 0)
        for cell, name in ((cells[1], f"ppo-{s}-warm"), (cells[2], f"ppo-{s}")):
            assert numbers(cell)[0] == pytest.approx(
                summary.loc[name, "diff_vs_best_heuristic_pct"], abs=0.05
            )
    assert goal == [True, False]  # ppo-1 is 0.85 / 0.9 of its warm start, ppo-2 1.1 / 0.95
    assert "PPO at least 2 % below its warm start with the interval below zero (the goal) for 1 of 2" in text


def test_the_warm_starts_are_rows_of_the_results_but_not_the_winner(reported):
    summary = pd.read_csv(reported["bench"] / "resume.csv")
    assert list(summary["policy"])[-4:] == ["ppo-1", "ppo-1-warm", "ppo-2", "ppo-2-warm"]
    results = reported["text"][reported["text"].index("## Results") : reported["text"].index("### Ranking")]
    assert "| ppo-1-warm |" in results and "| ppo-2-warm |" in results
    w = json.loads((reported["bench"] / "winner.json").read_text())
    assert not w["policy"].endswith("-warm") and not w["runner_up"].endswith("-warm")


def test_ppo_alone_is_read_from_the_settings_summary(reported):
    text = reported["text"]
    alone = pd.read_csv(reported["alone"] / "resume.csv").set_index("policy")
    main = pd.read_csv(reported["bench"] / "resume.csv").set_index("policy")
    bh = alone["best_heuristic"].iloc[0]
    for p, verdict in (("ppo-1", "worse"), ("ppo-2", "better")):
        x = alone.loc[p]
        section = text[text.index("### PPO alone") :]
        line = next(x for x in section.splitlines() if x.startswith(f"| ppo-only | {p} |"))
        cells = [c.strip() for c in line.split("|")[1:-1]]
        assert numbers(cells[2])[0] == pytest.approx(x.mean_twt_k, abs=5e-4)
        assert cells[3].startswith(f"{bh} (")
        want = [
            x.diff_vs_best_heuristic_pct,
            x.diff_vs_best_heuristic_ci_lo_pct,
            x.diff_vs_best_heuristic_ci_hi_pct,
        ]
        assert numbers(cells[4]) == pytest.approx(want, abs=0.05)
        assert (
            cells[5] == f"{x.wins_vs_best_heuristic}/{x.ties_vs_best_heuristic}/{x.losses_vs_best_heuristic}"
        )
        assert cells[6] == verdict
        assert numbers(cells[7])[0] == pytest.approx(main.loc[p, "mean_twt_k"], abs=5e-4)
    # ppo-2 (0.8 x the best heuristic) meets the goal, ppo-1 (1.2 x) does not
    assert (
        f"ppo-only: at least 3 % below {bh} with the interval below zero (the goal) for 1 of 2 seed(s)."
        in text
    )
    # the setting's row of the other-settings table says how it trains
    assert (
        "| ppo-only: load 0.85, machines 1 (the main ones) | retrained for it, by PPO alone (no teacher) |"
        in text
    )


def test_without_warm_starts_or_logs_the_sections_say_so(tiny, tmp_path):  # noqa: F811
    out = tmp_path / "rapport.md"
    report.build(tiny["cfg"], tiny["bench"], out, tmp_path / "figures", tmp_path / "no-train", None)
    text = out.read_text()
    assert "No training log" in text and "No warm start was benchmarked" in text
    assert "### PPO alone" not in text


def test_the_chain_figure_draws_each_seed_and_the_mean_over_the_checks_every_seed_reached():
    """Issue 48, point 1: validation cost against PPO's decisions, a line a seed, the mean a thick
    line that ends where the first seed stopped (the patience rule)."""
    from sched.report import figures

    def log(vals, step=1000):
        it = list(range(-1, len(vals) - 1))  # -1: the untrained network (not on this axis)
        return pd.DataFrame(
            {"iteration": it, "env_steps": [max(i, 0) * step for i in it], "val_weighted_tardiness_s": vals}
        )

    long_, short = log([50.0, 40.0, 38.0, 36.0, 35.0]), log([50.0, 42.0, 40.0])
    x, y = figures.chain_mean({1: long_, 2: short})
    assert list(x) == [0, 1000] and list(y) == [41.0, 39.0]  # iterations 0 and 1: both seeds reached them
    fig = figures.chain_curves_figure([("PPO alone", {1: long_, 2: short})], reference=("ATC", 45_000.0))
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 4  # ATC, two seeds, the mean
    seed1, mean = ax.get_lines()[1], ax.get_lines()[3]
    assert list(seed1.get_xdata()) == pytest.approx([0.0, 0.001, 0.002, 0.003])  # millions of decisions
    assert list(seed1.get_ydata()) == pytest.approx([0.040, 0.038, 0.036, 0.035])  # k w.s, from iteration 0
    assert list(mean.get_ydata()) == pytest.approx([0.041, 0.039]) and "mean of 2 seeds" in mean.get_label()
