"""The chunked farm settings (issue 59, points 3 to 7): generation of jobs of frames
(sched.data.jobs), the farm benchmark (sched.evaluate.farm.bench, `sched farm-bench`), its report rows
(sched.evaluate.farm.report) and the settings in the workflow's default profile."""

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from sched import layout
from sched.config import validate_config
from sched.data import jobs
from sched.data.scenario import draw, generate, scenario_model

from .conftest import ROOT, run_here

CHUNKS = {
    "frames": {"median": 12, "sigma": 1.0, "max": 200},
    "chunk_frames": 4,
    "max_gpus": None,
    "setup_s": 0,
}


def _cfg(chunks=None, **scenario):
    sc = {"tasks": 60, "machines": 2, **scenario}
    if chunks is not None:
        sc["chunks"] = copy.deepcopy(chunks)
    return validate_config({"scenario": sc}, "test")


# --------------------------------------------------------------------------- generation


@pytest.mark.parametrize("one_frame", [{"max": 1}, {"median": 1, "sigma": 0.0, "max": 50}])
def test_one_frame_per_job_draws_todays_scenario_bit_for_bit(one_frame):
    today = draw(scenario_model(_cfg()), 7)
    chunked = draw(scenario_model(_cfg({**CHUNKS, "frames": one_frame})), 7)
    for key in ("arrival", "duration", "estimate", "weight", "due", "kind", "priority"):
        assert np.array_equal(today[key], chunked[key]), key
    assert (chunked["frames"] == 1).all()


def test_job_sizes_are_frames_times_time_per_frame_and_the_other_draws_do_not_change():
    today = draw(scenario_model(_cfg()), 11)
    model = scenario_model(_cfg(CHUNKS))
    d = draw(model, 11)
    frames = d["frames"]
    assert frames.min() >= 1 and frames.max() <= 200 and len(set(frames)) > 5
    mean = np.array([model.chunks["frames"][k]["mean"] for k in d["kinds"]])[d["kind"]]
    # time per frame: today's draw over the kind's mean frames; the job: frames x time per frame
    assert np.allclose(d["duration"], frames * (today["duration"] / mean), rtol=1e-12)
    # the estimate errs per job as today: the same noise on the whole job
    assert np.allclose(d["estimate"] / d["duration"], today["estimate"] / today["duration"], rtol=1e-12)
    for key in ("arrival", "weight", "kind", "priority"):  # common random numbers
        assert np.array_equal(d[key], today[key]), key


def test_chunked_generation_is_seeded_and_reproducible():
    model = scenario_model(_cfg(CHUNKS))
    a, b, c = generate(model, 3), generate(scenario_model(_cfg(CHUNKS)), 3), generate(model, 4)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame["frames"].equals(c.frame["frames"])
    assert a.chunked and list(a.frame.columns[-4:]) == ["frames", "chunk_frames", "max_gpus", "setup_s"]
    frames, per, limit, setup = a.chunks
    assert (per == 4).all() and (limit == 0).all() and (setup == 0).all()


def test_the_chunk_settings_do_not_change_the_jobs_and_a_kind_may_be_indivisible():
    model = scenario_model(_cfg(CHUNKS))
    kinds = model.kinds
    other = {**CHUNKS, "chunk_frames": {kinds[0]: None, kinds[-1]: 2}, "max_gpus": 3}
    a, b = generate(model, 5), generate(scenario_model(_cfg(other)), 5)
    assert np.array_equal(a.frame["duration_s"], b.frame["duration_s"])
    frames, per, limit, _ = b.chunks
    is_first = (b.frame["kind"] == kinds[0]).to_numpy()
    assert len(kinds) == 2 and (per[is_first] == 0).all() and (per[~is_first] == 2).all()
    one = generate(scenario_model(_cfg({**CHUNKS, "chunk_frames": {kinds[-1]: 2}})), 5)
    assert (one.chunks[1][is_first] == 0).all()  # a kind left out: indivisible
    assert (limit == 3).all()


def test_the_mean_frames_is_exact_for_the_discretised_lognormal():
    rng = np.random.default_rng(0)
    y = np.clip(np.round(np.exp(math.log(48) + 1.0 * rng.standard_normal(400_000))), 1, 2000)
    assert jobs.mean_frames(48, 1.0, 2000) == pytest.approx(y.mean(), rel=5e-3)
    assert jobs.mean_frames(48, 0.0, 2000) == 48 and jobs.mean_frames(48, 1.0, 1) == 1


def test_a_chunk_setting_naming_an_unknown_kind_is_refused_in_one_line():
    with pytest.raises(jobs.JobsError, match=r"scenario\.chunks\.chunk_frames: unknown kind 'nope'"):
        scenario_model(_cfg({**CHUNKS, "chunk_frames": {"nope": 2}}))


def test_the_projects_main_config_has_no_chunks_so_todays_steps_do_not_change():
    from sched.config import load_config

    cfg = load_config(ROOT / "config.yaml")
    assert "chunks" not in cfg.scenario  # no default filled in: every step config and hash as before
    names = [s["name"] for s in cfg.farm.settings]
    assert {"farm-32", "heavy-tails-chunked"} <= set(names)
    by = {s["name"]: s for s in cfg.farm.settings}
    assert by["farm-32"]["machines"] == 32 and by["farm-32"]["chunks"]["sync_s"] == 0
    assert "profile" not in by["farm-32"] and "profile" not in by["heavy-tails-chunked"]  # default profile
    ht = next(s for s in cfg.robustness.settings if s["name"] == "heavy-tails")
    assert "chunks" not in ht  # heavy-tails keeps its single-GPU whole-task shape
    for key in ("workload", "workload_scale"):
        assert by["heavy-tails-chunked"][key] == ht[key]


# --------------------------------------------------------------------------- the farm benchmark

TINY = {
    "scenario": {"tasks": 40, "machines": 3, "load": 1.3, "chunks": CHUNKS},
    "benchmark": {
        "scenarios": 12,
        "validation_scenarios": 6,
        "atc_k_grid": [1.0, 3.0],
        "bootstrap_resamples": 200,
        "clairvoyant": {"scenarios": 2},
    },
}


@pytest.fixture(scope="module")
def farm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("farm")
    cfg = copy.deepcopy(TINY)
    cfg["scenario"]["chunks"] = {**CHUNKS, "selection_scenarios": 10}
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = run_here("--config", folder / "config.yaml", "farm-bench", "--out", folder / "out")
    assert r.returncode == 0, r.stderr[-2000:]
    return folder / "config.yaml", folder / "out", r


def test_the_farm_benchmark_writes_every_row_the_issue_names(farm_run):
    from sched.evaluate.farm import bench as farm

    _, out, _ = farm_run
    per = pd.read_csv(out / layout.PER_SCENARIO)
    verdict = yaml.safe_load((out / layout.FARM_VERDICT).read_text())
    shipped = verdict["policy"]
    assert shipped in farm.CANDIDATES
    syncs = [farm.sync_name(p, s) for s in farm.SYNCS for p in dict.fromkeys((shipped, "atc-tuned"))]
    want = [*farm.CANDIDATES, farm.WHOLE, *syncs]  # 3 GPUs: the limited policies are tuned too
    assert list(dict.fromkeys(per["policy"])) == want
    assert (per.groupby("policy").size() == 12).all()
    table = pd.read_csv(out / layout.FARM_TABLE)
    assert set(table["reference"]) == set(farm.REFERENCES)
    row = table[(table.policy == "atc-tuned") & (table.reference == farm.WHOLE)].iloc[0]
    means = per.groupby("policy")["total_weighted_tardiness_s"].mean() / 1e3
    assert row.mean_twt_k == pytest.approx(means["atc-tuned"]) and row.reference_mean_twt_k == pytest.approx(
        means[farm.WHOLE]
    )
    assert row.ci_lo_pct <= row.diff_pct <= row.ci_hi_pct
    tuned = yaml.safe_load((out / layout.TUNED).read_text())
    assert tuned["atc_k"] in (1.0, 3.0) and len(tuned["grid"]) == 2
    sel = pd.read_csv(out / layout.FARM_SELECTION)
    assert set(sel["scenario_seed"]) == set(range(1_001_000, 1_001_010))  # validation seeds, not test ones


def test_the_whole_row_is_todays_model_and_the_sync_rows_are_the_sync_loop(farm_run):
    from sched.evaluate.farm import bench as farm
    from sched.evaluate.per_scenario import schedule_metrics
    from sched.sim import sync
    from sched.sim.core import simulate

    config, out, _ = farm_run
    from sched.config import load_config

    cfg = load_config(config)
    tuned = yaml.safe_load((out / layout.TUNED).read_text())["atc_k"]
    shipped = yaml.safe_load((out / layout.FARM_VERDICT).read_text())
    per = pd.read_csv(out / layout.PER_SCENARIO).set_index(["policy", "scenario_seed"])
    (sc,) = farm.scenarios(cfg, [2_000_003])
    _s, end, _m = simulate(*sc.arrays, "atc", machines=3, k=tuned)  # one chunk a job, no setup
    whole = schedule_metrics(sc.arrays, None, end)["total_weighted_tardiness_s"]
    assert per.loc[(farm.WHOLE, 2_000_003), "total_weighted_tardiness_s"] == pytest.approx(whole, rel=1e-12)
    frames, chunk, limit, setup = sc.chunks
    sp = farm.spec(shipped["policy"], tuned)
    job, _c, _st, e, _mm = sync.simulate(
        *sc.arrays, sp["rule"], 3, sp["atc_k"], None, frames, chunk, limit, setup, None, 60.0
    )
    from sched.sim.chunks import job_ends

    synced = schedule_metrics(sc.arrays, None, job_ends(job, e, len(sc)))["total_weighted_tardiness_s"]
    name = farm.sync_name(shipped["policy"], 60.0)
    assert per.loc[(name, 2_000_003), "total_weighted_tardiness_s"] == pytest.approx(synced, rel=1e-12)


def test_the_farm_benchmark_refuses_a_setting_without_chunks(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"scenario": {"tasks": 10}}))
    r = run_here("--config", tmp_path / "c.yaml", "farm-bench", "--out", tmp_path / "o")
    assert r.returncode == 2 and "scenario.chunks" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_report_renders_the_farm_rows_from_farm_csv(farm_run):
    from sched.evaluate.farm.report import first_table_lines, read_farms, section_lines
    from sched.report.format import ci, pct

    _, out, _ = farm_run
    farms = read_farms([out, out.parent / "not-built"])
    assert len(farms) == 1
    first = first_table_lines(farms)
    table = pd.read_csv(out / layout.FARM_TABLE)
    shipped = farms[0][1]["policy"]
    r = table[(table.policy == shipped) & (table.reference == "farm-fifo")].iloc[0]
    (row,) = [x for x in first if x.startswith(f"| {out.name} |")]
    if shipped != "farm-fifo":
        assert f"{pct(r.diff_pct)} {ci(r.ci_lo_pct, r.ci_hi_pct)}, {r.wins}/{r.ties}/{r.losses}" in row
    text = "\n".join(section_lines(farms))
    w = table[(table.policy == "atc-tuned") & (table.reference == "atc-tuned-whole")].iloc[0]
    assert f"against the same jobs run whole: {pct(w.diff_pct)} {ci(w.ci_lo_pct, w.ci_hi_pct)}" in text
    assert "sync 60 s" in text and "sync 300 s" in text
    assert first_table_lines([]) == [] and section_lines([]) == []


# --------------------------------------------------------------------------- the workflow


def test_the_default_profile_plans_the_farm_settings_and_the_report_reads_them(tmp_path):
    from .test_workflow import SMALL, snakemake, workspace
    from .test_workflow_dag import jobs_of

    cfg = copy.deepcopy(SMALL)
    cfg["farm"] = {
        "settings": [
            {"name": "farm-3", "machines": 3, "chunks": CHUNKS},
            {"name": "farm-long", "profile": "full", "chunks": CHUNKS},
        ]
    }
    r = snakemake(workspace(tmp_path / "w", cfg), "-n", "-p")
    assert r.returncode == 0, r.output[-3000:]
    import re

    jobs = []
    for rule, body in re.findall(r"^rule (\w+):\n(.*?)(?=^\[|\Z)", r.output, re.M | re.S):
        jobs.append(
            (rule, dict(re.findall(r"^\s*(input|output|wildcards|Shell command): (.*)$", body, re.M)))
        )
    (bench,) = jobs_of(jobs, "farm_benchmark", farm="farm-3")
    assert "farm-bench --out results/farm/farm-3" in bench["Shell command"]
    assert not jobs_of(jobs, "farm_benchmark", farm="farm-long")  # the longer run only
    (report,) = jobs_of(jobs, "report")
    assert (
        "--farm results/farm/farm-3" in report["Shell command"]
        and "results/farm/farm-3/farm.csv" in report["input"]
    )
    (manifest,) = jobs_of(jobs, "manifest")
    assert "results/farm/farm-3/farm_verdict.json" in manifest["input"]
    written = (tmp_path / "w").glob("results/farm/*/config/farm.yaml")
    assert not list(written)  # a dry run writes nothing


def test_farm_learned_refuses_a_rules_verdict_with_a_bad_field_by_name_before_any_work(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"scenario": {"tasks": 10, "chunks": CHUNKS}}))
    bench = tmp_path / "bench"
    bench.mkdir()
    verdict = {"policy": "wspt", "rule": "no-such-rule", "atc_k": None, "cap": None, "sync_s": 0.0,
               "reason": "r",
               "setting": {"machines": 2, "speeds": None, "load": 0.85, "offered_gpus": 1.7}}  # fmt: skip
    (bench / "farm_verdict.json").write_text(json.dumps(verdict))
    r = run_here("--config", tmp_path / "c.yaml", "farm-learned", "--bench", bench,
                 "--policy", tmp_path / "absent.pt", "--out", tmp_path / "o")  # fmt: skip
    assert r.returncode == 2 and "farm_verdict.json: field rule" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
