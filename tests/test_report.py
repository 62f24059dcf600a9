"""rapport.md: every number comes from the benchmark's files."""

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from sched.evaluate.per_scenario import matrix, read_per_scenario, sort_frame
from sched.evaluate.policies import best_heuristic, resolve_policies
from sched.evaluate.statistics import bootstrap_counts, paired_difference
from sched.learn.ppo import train_log
from sched.report import document as report
from sched.verdict.outputs import write_outputs

from .conftest import run_here
from .test_benchmark import HEURISTICS, ok, tiny  # noqa: F401  (tiny: the shared fixture)

LOG_COLUMNS = [
    "iteration",
    "env_steps",
    "episodes",
    "mean_episode_weighted_tardiness_s",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "explained_variance",
    "steps_per_s",
    "collect_s",
    "update_s",
    "wall_s",
    "learning_rate",
]


@pytest.fixture(scope="module")
def built(tiny, tmp_path_factory):  # noqa: F811
    d = tmp_path_factory.mktemp("report")
    bench = d / "bench"
    shutil.copytree(tiny["bench"], bench)
    c = ("--config", tiny["conf"])
    ok(run_here(*c, "clairvoyant", "--out", bench / "clairvoyant.csv"))
    ok(
        run_here(
            *c,
            "demo",
            "--policies",
            HEURISTICS,
            "--tuned",
            bench / "tuned.json",
            "--out",
            d / "demo",
            "--figures",
            d / "figures",
        )
    )
    train = d / "train" / "seed-1"
    train.mkdir(parents=True)
    it = np.arange(1, 21)
    rows = pd.DataFrame(
        {c: it * 1.0 for c in LOG_COLUMNS}
        | {
            "iteration": it,
            "env_steps": it * 4096,
            "wall_s": it * 9.5,
            "mean_episode_weighted_tardiness_s": 20000.0 / it,
        }
    ).to_dict("records")
    train_log.write(train / "train_log.csv", rows)  # and its run record, train_log.run.csv
    paths = {
        "bench": bench,
        "out": d / "rapport.md",
        "figures": d / "figures",
        "train": d / "train",
        "demo": d / "demo",
        "dir": d,
    }
    ok(render(tiny, paths))
    return paths


def render(tiny, p, out=None):  # noqa: F811
    return run_here(
        "--config",
        tiny["conf"],
        "report",
        "--bench",
        p["bench"],
        "--out",
        out or p["out"],
        "--figures",
        p["figures"],
        "--train-dir",
        p["train"],
        "--demo",
        p["demo"],
    )


def table_rows(text):
    section = text[text.index("## Results") : text.index("### Ranking")]
    rows = [r for r in section.splitlines() if r.startswith("| ") and not r.startswith("| policy")]
    return {r.split("|")[1].strip().split(" ")[0]: [c.strip() for c in r.split("|")[2:-1]] for r in rows}


def numbers(cell):
    return [float(x.replace(",", "")) for x in re.findall(r"[-+]?\d[\d,]*\.?\d*", cell)]


def test_report_and_figures_are_written(built):
    text = built["out"].read_text()
    for name in report.FIGURES.values():
        assert (built["figures"] / name).stat().st_size > 5_000, name
        assert f"figures/{name}" in text
    for heading in (
        "## Setup",
        "## Results",
        "### Ranking",
        "## Clairvoyant headroom",
        "## Demonstration scenario",
        "## Conclusion",
        "## Reproduce",
    ):
        assert heading in text


def test_every_table_cell_is_read_from_the_summary(built):
    summary = pd.read_csv(built["bench"] / "resume.csv").set_index("policy")
    rows = table_rows(built["out"].read_text())
    assert list(rows) == HEURISTICS.split(",")
    for policy, cells in rows.items():
        r = summary.loc[policy]
        mean, lo, hi = numbers(cells[0])
        assert mean == pytest.approx(r.mean_twt_k, abs=5e-4)
        assert (lo, hi) == pytest.approx((r.mean_twt_ci_lo_k, r.mean_twt_ci_hi_k), abs=5e-4)
        assert numbers(cells[1])[0] == pytest.approx(r.p90_twt_k, abs=5e-4)
        assert numbers(cells[2])[0] == pytest.approx(r.gain_vs_fifo_pct, abs=0.05)
        for cell, ref in ((cells[3], "atc"), (cells[5], "best_heuristic")):
            got = numbers(cell)
            want = [r[f"diff_vs_{ref}_pct"], r[f"diff_vs_{ref}_ci_lo_pct"], r[f"diff_vs_{ref}_ci_hi_pct"]]
            finite = [w for w in want[1:] if np.isfinite(w)]
            assert got[0] == pytest.approx(want[0], abs=0.05)
            assert got[1:] == pytest.approx(finite, abs=0.05)
        for cell, ref in ((cells[4], "atc"), (cells[6], "best_heuristic")):
            assert cell == f"{r[f'wins_vs_{ref}']}/{r[f'ties_vs_{ref}']}/{r[f'losses_vs_{ref}']}"


def test_changed_files_change_the_report(built, tiny):  # noqa: F811
    """Numbers are read from the files, not typed: edit the files, the report follows."""
    p = dict(built, bench=built["dir"] / "edited")
    shutil.copytree(built["bench"], p["bench"])
    summary = pd.read_csv(p["bench"] / "resume.csv")
    i = {name: j for j, name in enumerate(summary["policy"])}
    summary.loc[i["wmdd"], "p90_twt_k"] = 987.654321
    summary.loc[i["spt"], "diff_vs_atc_ci_lo_pct"] = -55.44
    summary.loc[i["edd"], ["wins_vs_atc", "ties_vs_atc", "losses_vs_atc"]] = [77, 0, 1]
    summary.to_csv(p["bench"] / "resume.csv", index=False)
    w = json.loads((p["bench"] / "winner.json").read_text())
    w.update(significant=False, reason="A reason written by the test.")
    (p["bench"] / "winner.json").write_text(json.dumps(w))
    tuned = json.loads((p["bench"] / "tuned.json").read_text())
    tuned["validation_seeds"]["count"] = 4321
    (p["bench"] / "tuned.json").write_text(json.dumps(tuned))
    out = p["dir"] / "edited.md"
    ok(render(tiny, p, out))
    text = out.read_text()
    rows = table_rows(text)
    assert rows["wmdd"][1] == "987.654"
    assert "[-55.4," in rows["spt"][3]
    assert rows["edd"][4] == "77/0/1"
    assert "A reason written by the test." in text
    assert "k chosen on 4321 validation scenarios" in text


def test_inconsistent_files_are_refused(built, tiny):  # noqa: F811
    p = dict(built, bench=built["dir"] / "stale")
    shutil.copytree(built["bench"], p["bench"])
    summary = pd.read_csv(p["bench"] / "resume.csv")
    summary.loc[0, "mean_twt_k"] *= 1.01
    summary.to_csv(p["bench"] / "resume.csv", index=False)
    out = p["dir"] / "stale.md"
    r = render(tiny, p, out)
    assert r.returncode == 2 and "does not match per_scenario.csv" in r.stderr
    assert not out.exists()


def test_setup_headroom_and_demo_are_read_from_their_files(built):
    text = built["out"].read_text()
    per = pd.read_csv(built["bench"] / "per_scenario.csv")
    seeds = sorted(set(per["scenario_seed"]))
    assert f"{len(seeds)} scenarios, seeds {seeds[0]}-{seeds[-1]}" in text
    assert "ppo-1: 20 iterations, 81,920 environment steps, 3.2 min" in text
    clair = pd.read_csv(built["bench"] / "clairvoyant.csv")
    summary = pd.read_csv(built["bench"] / "resume.csv")
    best = summary.sort_values("rank")["policy"].iloc[0]
    b = per[(per.policy == best) & per.scenario_seed.isin(clair.scenario_seed)]
    n = len(clair)
    assert (
        f"clairvoyant schedules total {clair.clairvoyant_twt_s.sum() / n / 1000:,.3f} k w·s "
        f"per scenario on average against {b.total_weighted_tardiness_s.sum() / n / 1000:,.3f} "
        f"k w·s for the best policy, {best}"
    ) in text
    demo = pd.read_csv(built["demo"] / "demo.csv")
    for r in demo.itertuples():
        assert f"| {r.policy} | {r.total_weighted_tardiness_s / 1000:,.3f} |" in text
    ranking = text[text.index("### Ranking") :].split("\n\n")[1]
    assert re.findall(r"\d+\. ([\w-]+) \(", ranking) == list(summary.sort_values("rank")["policy"])


def test_conclusion_without_ppo_says_so(built):
    text = built["out"].read_text()
    w = json.loads((built["bench"] / "winner.json").read_text())
    assert "No learned policy was benchmarked" in text
    assert f"`winner.json` records {w['policy']}" in text


@pytest.mark.parametrize("factor,verdict", [(0.8, "beats"), (1.3, "loses to")])
def test_conclusion_with_ppo_follows_the_numbers(built, tiny, factor, verdict):  # noqa: F811
    """A synthetic PPO column (a multiple of the best heuristic) goes through the same code."""
    per = read_per_scenario(built["bench"] / "per_scenario.csv")
    cfg = tiny["cfg"]
    _, twt = matrix(per)
    bh = best_heuristic(twt)
    rng = np.random.default_rng(1)
    ppo = per[per.policy == bh].copy()
    ppo["policy"] = "ppo-1"
    ppo["total_weighted_tardiness_s"] *= factor * rng.uniform(0.97, 1.03, len(ppo))
    frame = sort_frame(pd.concat([per, ppo], ignore_index=True))
    specs, _ = resolve_policies(cfg, HEURISTICS.split(","), tuned=built["bench"] / "tuned.json")
    pfile = built["dir"] / "p.pt"  # hashed into winner.json (policy_sha256): it must exist
    pfile.write_bytes(b"a policy file")
    specs["ppo-1"] = {"kind": "ppo", "rule": None, "atc_k": None, "policy_file": str(pfile)}
    d = built["dir"] / f"ppo-{factor}"
    shutil.copytree(built["bench"], d)
    write_outputs(d, frame, cfg, specs, full=True)
    out = d / "rapport.md"
    report.build(cfg, d, out, d / "figs", built["train"], built["demo"])
    text = out.read_text()
    w = json.loads((d / "winner.json").read_text())
    r = pd.read_csv(d / "resume.csv").set_index("policy").loc["ppo-1"]
    assert f"The best training seed, ppo-1, {verdict} the best heuristic {bh}" in text
    if verdict == "beats":
        assert (w["policy"], w["significant"], w["policy_file"]) == ("ppo-1", True, str(pfile))
        assert "**The winner is ppo-1** (the learned policy)" in text
    else:
        # ppo-1 loses: the incumbent (atc-tuned) stays unless the best heuristic is
        # significantly better than it
        assert r.diff_vs_best_heuristic_ci_lo_pct > 0
        inc = "atc-tuned" if "atc-tuned" in twt else "atc"
        counts = bootstrap_counts(
            len(twt[inc]), cfg["benchmark"]["bootstrap_resamples"], cfg["benchmark"]["bootstrap_seed"]
        )
        hi = paired_difference(twt[bh], twt[inc], counts, cfg["benchmark"]["ci_level"])[2]
        same = twt[bh].tolist() == twt[inc].tolist()
        want = bh if hi < 0 and not same else inc
        assert w["policy"] == want and w["runner_up"] != "ppo-1"
        if w["significant"]:
            assert f"**The winner is {want}** (a dispatching rule)" in text
        else:
            assert "**No policy wins significantly.**" in text and "is kept" in w["reason"]
    assert f"{abs(r.diff_vs_best_heuristic_pct):.1f} % {'lower' if factor < 1 else 'higher'}" in text


def test_files_from_another_config_are_refused(built, tiny, tmp_path):  # noqa: F811
    import yaml

    conf = tmp_path / "other.yaml"
    conf.write_text(yaml.safe_dump(tiny["cfg"].replace(scenario={"load": 0.7}).to_dict()))
    r = run_here(
        "--config",
        conf,
        "report",
        "--bench",
        built["bench"],
        "--out",
        tmp_path / "r.md",
        "--figures",
        tmp_path / "f",
        "--train-dir",
        built["train"],
        "--demo",
        built["demo"],
    )
    assert r.returncode == 2 and "made with scenario settings" in r.stderr
    assert not (tmp_path / "r.md").exists()


def test_readme_results_block_is_the_reports_tables(built, tiny, tmp_path):  # noqa: F811
    readme = tmp_path / "README.md"
    before, after = "# Project\n\nIntro.\n\n## Results\n\n", "\n## Set up and run\n\nText.\n"
    readme.write_text(before + report.README_BEGIN + "\nstale numbers\n" + report.README_END + after)
    out = tmp_path / "rapport.md"
    r = run_here(
        "--config", tiny["conf"], "report", "--bench", built["bench"], "--out", out,
        "--figures", built["figures"], "--train-dir", built["train"], "--demo", built["demo"],
        "--readme", readme,
    )  # fmt: skip
    ok(r)
    text = readme.read_text()
    assert text.startswith(before) and text.endswith(after)  # only the block changed
    assert "stale numbers" not in text
    block = text[text.index(report.README_BEGIN) : text.index(report.README_END)]
    # the same table rows as the report's results table, cell for cell (after the first table)
    first, rest = block[: block.index("### In short")], block[block.index("### In short") :]
    assert table_rows("## Results\n" + rest + "### Ranking") == table_rows(out.read_text())
    # it opens with the report's first table, what rank() runs in each setting, row for row, less
    # its last column (plan's decision time, a run record: the block holds results only)
    shipped = out.read_text().split("## What rank() runs", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in shipped.splitlines() if r.startswith("| ")]
    assert "### What rank() runs" in first and rows[1].startswith("| main | ")
    assert rows[0].endswith(" plan's decision time |") and "decision time |" not in first
    bare = [r.rsplit(" |", 2)[0] + " |" for r in rows]
    assert [r for r in first.splitlines() if r.startswith("| ")] == bare
    # running it again changes nothing
    ok(
        run_here(
            "--config",
            tiny["conf"],
            "report",
            "--bench",
            built["bench"],
            "--out",
            out,
            "--figures",
            built["figures"],
            "--train-dir",
            built["train"],
            "--demo",
            built["demo"],
            "--readme",
            readme,
        )  # fmt: skip
    )
    assert readme.read_text() == text


def test_readme_without_a_results_block_is_refused(built, tiny, tmp_path):  # noqa: F811
    readme = tmp_path / "README.md"
    readme.write_text("# Project\n\nNo block here.\n")
    r = run_here(
        "--config", tiny["conf"], "report", "--bench", built["bench"], "--out", tmp_path / "r.md",
        "--figures", built["figures"], "--train-dir", built["train"], "--demo", built["demo"],
        "--readme", readme,
    )  # fmt: skip
    assert r.returncode == 2 and "no results block" in r.stderr and "Traceback" not in r.stderr
    assert readme.read_text() == "# Project\n\nNo block here.\n"


def test_the_projects_readme_has_a_results_block():
    from .conftest import ROOT

    lines = (ROOT / "README.md").read_text().split("\n")
    assert lines.index(report.README_BEGIN) < lines.index(report.README_END)
