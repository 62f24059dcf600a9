"""The workflow's plan without Snakemake (sched/pipeline/): what each job reads, runs and writes.

Built from the project's config.yaml (validated as the Snakefile does) and small variants of it;
nothing here runs a job.
"""

import json
from types import SimpleNamespace

import pytest
import yaml

from sched import layout
from sched.config import load_yaml, validate_config
from sched.evaluate.policies import HEURISTICS, policy_key
from sched.evaluate.seeds import parse_seed_range
from sched.pipeline import candidacy, steps, studio, wildcards
from sched.pipeline.plan import FARM_FILES, Plan, PlanError, active

from .conftest import ROOT


def make_plan(**changes):
    """The plan of config.yaml with top-level ``changes`` (validated, defaults filled)."""
    data = load_yaml(ROOT / "config.yaml")
    data.update(changes)
    cfg = validate_config(data, "config")
    return Plan(cfg.to_dict(), cfg)


@pytest.fixture(scope="module")
def plan():
    return make_plan()


@pytest.fixture(scope="module")
def full():
    return make_plan(profile="full")


# ------------------------------------------------------------------ step configs


def test_every_train_setting_is_read_by_a_step_or_said_unread(plan):
    steps.check_train_listed(plan.config)
    config = {**plan.config, "train": {**plan.config["train"], "new_knob": 1}}
    with pytest.raises(steps.StepError, match="train.new_knob"):
        steps.check_train_listed(config)


def test_a_step_reads_exactly_its_listed_settings(plan):
    teach = plan.step_settings("teach")
    assert set(teach) == {"scenario", "rules", "seeds", "train"}
    assert list(teach["train"]) == steps.TEACHER
    assert teach["scenario"] == plan.config["scenario"]  # ALL: the whole section
    assert teach["train"]["teacher_scenarios"] == plan.config["train"]["teacher_scenarios"]
    bench = plan.step_settings("benchmark")["benchmark"]
    assert bench["clairvoyant"] == {"scenarios": plan.config["benchmark"]["clairvoyant"]["scenarios"]}
    # plan's own settings leave out where its candidacy runs elsewhere; the report reads them all
    assert "elsewhere" not in plan.step_settings("plan")["plan"]
    assert set(plan.step_settings("plan")["plan"]) == set(plan.config["plan"]) - {"elsewhere"}
    assert plan.step_settings("report")["plan"] == plan.config["plan"]
    assert "train" not in plan.step_settings("calibrate")


def test_a_step_config_file_is_its_settings_under_a_header_with_the_root(plan):
    text = plan.step_config_text("tune")
    assert text.startswith("# Written by the workflow from its config: the settings `sched tune`")
    data = yaml.safe_load(text)
    assert data.pop("root") == "../.."  # results/config/ -> the project root
    assert data == plan.step_settings("tune")
    assert plan.step_config("tune") == layout.step_config("tune", layout.RESULTS)
    # under a setting: one folder deeper, its name in the header, its overrides in the settings
    text = plan.step_config_text("tune", "load-0.95")
    assert "robustness setting 'load-0.95'" in text
    data = yaml.safe_load(text)
    assert data["root"] == "../../../.." and data["scenario"]["load"] == 0.95


def test_reordering_the_config_changes_no_config_file(plan):
    reordered = make_plan(**{"scenario": dict(reversed(list(plan.config["scenario"].items())))})
    for step in steps.STEP_SETTINGS:
        assert reordered.step_config_text(step) == plan.step_config_text(step), step


def test_a_setting_that_retrains_overrides_train_but_its_k_goes_on_the_command_line(plan, tmp_path):
    own = plan.robust["ppo-only"]["train"]
    train = plan.step_settings("train", "ppo-only")["train"]
    assert all(train[k] == v for k, v in own.items())
    # teach reads its own keys of the overrides only
    assert set(plan.step_settings("teach", "ppo-only")["train"]) == set(steps.TEACHER)
    # the studio's atc_k `tuned` is never written: read from its tuned.json, passed as --atc-k
    assert plan.robust[studio.NAME]["train"]["atc_k"] == "tuned"
    assert plan.step_settings("train", studio.NAME)["train"]["atc_k"] == plan.config["train"]["atc_k"]
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps({"atc_k": 2.5}))
    assert plan.atc_k_arg(studio.NAME, tuned) == "--atc-k 2.5"
    assert plan.atc_k_arg("load-0.70", tuned) == ""


def test_farm_settings_override_their_scenario_keys_only(plan):
    name = next(iter(plan.farm))
    data = yaml.safe_load(plan.farm_config_text(name))
    assert "chunked farm setting" in plan.farm_config_text(name)
    assert data["scenario"]["chunks"] == plan.farm[name]["chunks"]
    assert set(data) == {"root", *steps.FARM_STEP}
    assert plan.farm_outputs(name) == [f"{layout.farm_root(name)}/{f}" for f in FARM_FILES]
    assert set(plan.farm_outputs()) >= set(plan.farm_outputs(name))


# ------------------------------------------------------------------ policies and seeds


def test_policy_lists_follow_the_table_order_and_what_may_win(plan):
    bench = plan.bench_policies().split(",")
    assert bench == sorted(bench, key=policy_key) and set(HEURISTICS) <= set(bench)
    rounds = plan.train_rounds()
    assert plan.has_teacher() and rounds > 0
    for s in plan.train_seeds:
        assert {f"ppo-{s}", f"ppo-{s}-warm", f"ppo-{s}-r{rounds}"} <= set(bench)
    # the delayed rules (issue 60) the config names compete beside the heuristics
    waits = plan.wait_rules()
    assert set(waits) <= set(bench) and set(waits) == set(plan.config["benchmark"]["waiting"]["rules"])
    select = plan.select_policies().split(",")
    assert set(select) == {*HEURISTICS, *waits, *(f"ppo-{s}" for s in plan.train_seeds)}
    # a setting without wait_rules runs none; heavy-tails names its own
    assert not set(waits) & set(plan.bench_policies("load-0.70").split(","))
    own = plan.robust["heavy-tails"]["wait_rules"]
    assert own and set(own) <= set(plan.select_policies("heavy-tails").split(","))
    # every learned policy is named on the command line with its file, which is a job input
    args = plan.policy_file_args()
    learned = len(bench) - len(HEURISTICS) - len(waits)
    assert args.count("--policy-file") == len(plan.policy_files()) == learned
    assert all(path in args for path in plan.policy_files())


def test_a_setting_runs_its_own_policies_or_the_main_ones(plan):
    assert plan.policy_files("load-0.70", warm=False) == plan.policy_files(warm=False)
    own = plan.policy_files("ppo-only", warm=False)
    assert own and all(p.startswith(layout.robust_root("ppo-only")) for p in own)
    # the studio benchmarks the main setting's policies too, as main-ppo-<S>
    names = plan.bench_policies(studio.NAME).split(",")
    assert {f"main-ppo-{s}" for s in plan.train_seeds} <= set(names)
    assert not any(n.startswith("main-") for n in plan.select_policies(studio.NAME).split(","))


def test_the_shards_cut_the_test_seeds_without_gap_or_overlap(plan):
    test = parse_seed_range(plan.test_seeds)
    seeds = [s for shard in plan.shards for s in parse_seed_range(shard)]
    assert seeds == list(test)


def test_the_teacher_shards_partition_its_first_training_seeds():
    for n, k in ((200, 2), (7, 3), (3, 8)):
        plan = make_plan(train={**load_yaml(ROOT / "config.yaml")["train"], "teacher_scenarios": n,
                                "teacher_shards": k})  # fmt: skip
        shards = plan.teacher_shards()
        assert len(shards) == min(n, k)
        seeds = [s for shard in shards for s in parse_seed_range(shard)]
        first = plan.config["seeds"]["train"]["start"]
        assert seeds == list(range(first, first + n))
        assert len(plan.teacher_files()) == len(shards)


def test_without_a_teacher_there_is_no_warm_start_nor_round():
    plan = make_plan(train={**load_yaml(ROOT / "config.yaml")["train"], "teacher_scenarios": 0})
    assert not plan.has_teacher() and plan.train_rounds() == 0 and plan.teacher_shards() == []
    assert plan.train_init(1) == [] and "-warm" not in plan.bench_policies()


def test_the_studio_chooses_its_winner_on_its_own_count_of_selection_seeds(plan):
    main = parse_seed_range(plan.setting_selection_seeds())
    own = parse_seed_range(plan.setting_selection_seeds(studio.NAME))
    assert len(own) == studio.selection_scenarios(plan.config) and own.start == main.start


# ------------------------------------------------------------------ settings and the studio


def test_the_profile_decides_which_settings_are_built(plan, full):
    entries = [{"name": "a"}, {"name": "b", "profile": "full"}]
    assert list(active(entries, "default")) == ["a"] and list(active(entries, "full")) == ["a", "b"]
    assert set(plan.robust) < set(full.robust) and studio.NAME in plan.robust
    assert plan.planners() == "plan" and full.planners() == "plan,teacher"


def test_the_studio_is_built_from_its_section_with_the_schemas_defaults(plan):
    setting = studio.setting({"studio": {}})
    assert setting["workload"] == layout.WORKLOAD and setting["train"] == studio.DEFAULT_TRAIN
    assert setting["tasks"] == "day" and setting["warm_up_days"] == 1
    # the frozen config's section gives the same scenarios as the dict's (`sched fidelity`)
    assert studio.scenario(plan.cfg.studio) == studio.scenario(plan.config["studio"])
    assert studio.fidelity_options(plan.cfg) == studio.fidelity_options(plan.config)
    assert plan.calibration_input(studio.NAME)[-1] == layout.WORKLOAD
    root = layout.robust_root(studio.NAME)
    files = studio.held_out_files() + studio.validation_day_files() + studio.fidelity_files()
    assert all(f.startswith(root + "/") for f in files) and len(set(files)) == 9


def test_no_history_no_studio_and_its_name_is_reserved():
    data = load_yaml(ROOT / "config.yaml")
    plan = make_plan(workload={**data["workload"], "history": []})
    assert studio.NAME not in plan.robust and plan.replay_outputs() == []
    taken = {**data["robustness"], "settings": [*data["robustness"]["settings"], {"name": studio.NAME}]}
    with pytest.raises(PlanError, match="studio setting's"):
        make_plan(robustness=taken)


def test_the_robust_summaries_wait_for_the_studio(plan):
    assert len(plan.robust_summaries(True)) == len(plan.robust)
    assert len(plan.robust_summaries(False)) == len(plan.robust) - 1


def test_plans_candidacy_elsewhere_only_in_the_longer_run(plan, full):
    assert candidacy.inputs_under(plan, studio.NAME) == [] and candidacy.args_under(plan, "load-0.70") == ""
    assert candidacy.verdict_step(plan, "load-0.70") == "gather"
    assert candidacy.studio_replay_step(plan) == "replay"
    assert candidacy.verdict_step(full, "load-0.70") == "verdict"
    grid = candidacy.grid_under(full, studio.NAME)
    assert grid and set(grid) >= set(candidacy.grid_under(full, "load-0.70"))
    dirs = candidacy.dirs_under(full, studio.NAME)
    assert len(dirs) == len(grid) and all(d in candidacy.args_under(full, studio.NAME) for d in dirs)
    assert candidacy.studio_replay_step(full) == "replay_plan"
    extra, options = candidacy.studio_replay_args(full)
    assert extra == ",plan" and "--plan-candidacy" in options
    assert len(candidacy.main_dirs(plan)) == len(plan.plan_settings)


# ------------------------------------------------------------------ the rules' functions


def test_the_rules_functions_read_the_wildcards(plan, tmp_path):
    by = wildcards.ByWildcards(plan)
    w = SimpleNamespace(step="select", setting="load-0.95", seed="2", round="2", farm=next(iter(plan.farm)))
    assert by.step_config_text(w) == plan.step_config_text("select", "load-0.95")
    assert by.step_config_text(SimpleNamespace(step="select")) == plan.step_config_text("select")
    assert by.round_start(w) == layout.round_policy_file("2", 1)
    assert by.round_labels(w) == [layout.round_labels("2", 1), layout.round_labels("2", 2)]
    assert by.round_start(SimpleNamespace(seed="2", round="1")) == layout.warm_policy_file("2")
    assert by.selection_seeds(w) == plan.setting_selection_seeds("load-0.95")
    assert by.farm_inputs(w) == plan.farm_inputs(w.farm)
    runs = ["a b/plan.json", "c/plan.json"]
    inp = SimpleNamespace(selection="sel.csv", candidacy=runs, init=[], calibration=[])
    assert by.selection_arg(w, inp).startswith("--selection sel.csv")
    assert wildcards.candidacy_dirs(w, inp) == "'a b' c"
    assert wildcards.init_arg(w, inp) == "" and wildcards.calibration_arg(w, inp) == ""
    assert wildcards.output_dir(w, ["x/y/z.csv"]) == "x/y"


def test_a_settings_tuned_k_is_read_through_the_checked_json_reader(tmp_path):
    """`--atc-k` of a setting training from its own tuned k: the number in its tuned.json, and a
    file whose atc_k is no number > 0 (or no JSON) is refused naming the file and the field."""
    from sched.pipeline.plan import PlanError

    p = make_plan()
    p.robust["load-0.70"] = {**p.robust["load-0.70"], "train": {"atc_k": "tuned"}}
    tuned = tmp_path / "tuned.json"
    tuned.write_text('{"atc_k": 2.5}')
    assert p.atc_k_arg("load-0.70", str(tuned)) == "--atc-k 2.5"
    for text in ('{"atc_k": "2"}', '{"atc_k": 0}', '{"atc_k": 1, "atc_k": 2}', "[1]", "{"):
        tuned.write_text(text)
        with pytest.raises(PlanError, match="tuned.json"):
            p.atc_k_arg("load-0.70", str(tuned))


def test_the_report_declares_every_file_it_reads_of_the_settings(plan):
    """The report's job runs in a shadow folder: what it reads of each robustness setting (its
    verdict and per-scenario table, not only its summary) must be declared, or its first table
    says "not built by this run" for settings that were."""
    files = plan.robust_report_inputs(studio_built=False)
    for name in plan.robust:
        root = layout.robust_root(name)
        wanted = {f"{root}/{f}" for f in (layout.SUMMARY, layout.WINNER, layout.PER_SCENARIO, layout.TUNED)}
        assert (wanted <= set(files)) == (name != studio.NAME)
    assert set(plan.robust_summaries(False)) <= set(files)


def test_a_tuned_k_not_built_yet_is_the_file_not_found_snakemake_postpones(tmp_path):
    """In a dry run the setting's tuned.json does not exist yet: the error must be a
    FileNotFoundError naming that file (what Snakemake takes as "evaluate this later")."""
    p = make_plan()
    p.robust["load-0.70"] = {**p.robust["load-0.70"], "train": {"atc_k": "tuned"}}
    missing = str(tmp_path / "tuned.json")
    with pytest.raises(FileNotFoundError) as err:
        p.atc_k_arg("load-0.70", missing)
    assert err.value.filename == missing


def test_a_profile_without_a_plan_setting_is_refused_by_name():
    data = load_yaml(ROOT / "config.yaml")
    only_off = [{**g, "profile": "off"} for g in data["plan"]["grid"]]
    with pytest.raises(PlanError, match="no setting runs in the default profile; one must"):
        make_plan(plan={**data["plan"], "grid": only_off})
    longer = [{**g, "profile": "full"} for g in data["plan"]["grid"]]
    assert make_plan(plan={**data["plan"], "grid": longer}, profile="full").plan_settings == [
        g["name"] for g in longer
    ]
    # the shipped grid: the learned continuations run in neither run
    assert not {"base-8x20", "base-8x50"} & set(make_plan(profile="full").plan_settings)


def test_farm_bench_runs_plans_candidacy_on_two_threads_in_the_longer_run_only(plan, full):
    assert (plan.farm_plan_arg(), plan.farm_bench_threads()) == ("", 1)
    assert (full.farm_plan_arg(), full.farm_bench_threads()) == ("--plan", 2)
    smk = (ROOT / "workflow" / "rules" / "farm.smk").read_text()
    assert (
        "threads: cores(PLAN.farm_bench_threads())"
        in smk.split("rule farm_benchmark:")[1].split("\nrule ")[0]
    )
