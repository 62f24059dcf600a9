"""`sched scenario` and `sched simulate` as a user runs them."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from sched.data.scenario import read_scenario
from sched.sim import reference, rules

from .conftest import ROOT

HAND_MADE = """id,kind,arrival_s,duration_s,weight,due_s,estimate_s,note
a,image,0,30,1,40,30,first
b,video,0,200,4,150,180,already tight
c,image,10,20,2,35,25,
d,image,10,20,2,35,25,tie with c
e,image,250,15,8,260,15,urgent
f,video,260,100,1,200,100,late on arrival
g,image,600,10,1,700,10,after an idle gap
h,image,610,10,2,612,10,
"""


def check_schedule(path, scenario_path, rule, machines, summary):
    sched = pd.read_csv(path, dtype={"id": str})
    sc = read_scenario(scenario_path)
    # every scenario column carried through, then the schedule columns
    assert list(sched.columns[: len(sc.frame.columns)]) == list(sc.frame.columns)
    assert list(sched.columns[len(sc.frame.columns) :]) == [
        "machine",
        "start_s",
        "end_s",
        "tardiness_s",
        "weighted_tardiness_s",
    ]
    assert len(sched) == len(sc)
    assert sched["machine"].between(0, machines - 1).all()
    assert (sched["start_s"] >= sched["arrival_s"]).all()
    assert np.allclose(sched["end_s"] - sched["start_s"], sched["duration_s"])
    for _, g in sched.groupby("machine"):
        g = g.sort_values("start_s")
        assert (g["start_s"].to_numpy()[1:] >= g["end_s"].to_numpy()[:-1]).all()  # no overlap
    total = sched["weighted_tardiness_s"].sum()
    assert total == pytest.approx(summary["total_weighted_tardiness_s"], rel=1e-12, abs=1e-9)
    assert summary["mean_weighted_tardiness_s"] == pytest.approx(total / len(sched))
    ref_start, _, ref_mach = reference.simulate(*sc.arrays, rule, machines=machines)
    assert np.array_equal(sched["start_s"].to_numpy(), np.array(ref_start))
    assert np.array_equal(sched["machine"].to_numpy(), np.array(ref_mach))
    return total


@pytest.mark.parametrize("machines", [1, 3])
def test_every_rule_on_generated_and_hand_made_files(tmp_path, machines, cli):
    hand = tmp_path / "hand.csv"
    hand.write_text(HAND_MADE)
    gen = tmp_path / "gen.csv"
    r = cli("scenario", "--seed", 7, "--tasks", 200, "--machines", machines, "--out", gen)
    assert r.returncode == 0, r.stderr
    totals = {}
    for rule in rules.RULES:
        out = tmp_path / f"out-{rule}-{machines}"
        r = cli("simulate", "--policy", rule, "--scenario", hand, gen, "--machines", machines, "--out", out)
        assert r.returncode == 0, r.stderr
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        assert [x["scenario"] for x in lines] == ["hand", "gen"]
        for line, src in zip(lines, (hand, gen)):
            assert line["policy"] == rule and line["machines"] == machines
            assert line["tasks"] == len(read_scenario(src))
            totals[(rule, src.stem)] = check_schedule(out / f"{src.stem}.csv", src, rule, machines, line)
    # the rules really differ on the generated scenario
    assert len({round(totals[(r, "gen")], 6) for r in rules.RULES}) >= 4


def test_single_scenario_to_a_file_and_seed_mode(tmp_path, cli):
    out = tmp_path / "one.csv"
    r = cli("simulate", "--policy", "wmdd", "--seed", 3, "--out", out)
    assert r.returncode == 0, r.stderr
    line = json.loads(r.stdout)
    assert line["scenario"] == "seed-3" and line["tasks"] == 400
    assert pd.read_csv(out)["weighted_tardiness_s"].sum() == pytest.approx(line["total_weighted_tardiness_s"])


def test_atc_k_changes_the_schedule(tmp_path, cli):
    a = json.loads(cli("simulate", "--policy", "atc", "--seed", 1, "--atc-k", 0.3).stdout)
    b = json.loads(cli("simulate", "--policy", "atc", "--seed", 1, "--atc-k", 6).stdout)
    assert a["atc_k"] == 0.3 and b["atc_k"] == 6.0
    assert a["total_weighted_tardiness_s"] != b["total_weighted_tardiness_s"]


def test_bad_file_fails_cleanly_and_writes_nothing(tmp_path, cli):
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(HAND_MADE)
    bad.write_text("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,-5,1,3\n")
    out = tmp_path / "out"
    r = cli("simulate", "--policy", "atc", "--scenario", good, bad, "--out", out)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "bad.csv: row 1 (line 2) field duration_s" in r.stderr
    assert not out.exists()


def test_unknown_policy_and_bad_machines(tmp_path, cli):
    r = cli("simulate", "--policy", "lifo", "--seed", 1)
    assert r.returncode == 2 and "unknown policy 'lifo'" in r.stderr
    r = cli("simulate", "--policy", "atc", "--seed", 1, "--machines", 0)
    assert r.returncode == 2 and "--machines" in r.stderr


@pytest.mark.parametrize(
    "command", [["scenario", "--seed", "1", "--tasks", "3"], ["simulate", "--policy", "atc", "--seed", "1"]]
)
def test_light_commands_do_not_import_torch(command, calibrated):
    code = (
        "import sys; from sched.cli import main; rc = main(%r); "
        "sys.exit(3 if 'torch' in sys.modules else rc)" % (["--config", str(calibrated.config)] + command)
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_console_script_and_module_entry_points():
    exe = ROOT / ".venv" / "bin" / "sched"
    if not exe.exists():
        pytest.skip("console script not installed in .venv")
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0 and "simulate" in r.stdout
    # `import sched` must give this package, not the standard library's sched module
    r = subprocess.run(
        [str(exe.parent / "python"), "-c", "import sched, sys; print(sched.__file__)"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert r.stdout.strip() == str(ROOT / "sched" / "__init__.py")
