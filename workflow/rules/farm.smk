# The chunked farm settings (config farm.settings; issue 59, points 3 to 7): jobs of frames on a
# render farm, each benchmarked in one job by `sched farm-bench` under results/farm/<name>/. Rules
# only (no training): ATC's k tuned at frame level, the shipped rule chosen on validation seeds, the
# test seeds against the farm's dispatchers, the same jobs run whole, and the sync intervals.
# Apart from the robustness settings: nothing of theirs changes (docs/workflow.md).

# Settings marked `profile: full` are built by the longer run only, as the robustness settings.
FARM = {s["name"]: s for s in (config.get("farm") or {}).get("settings", [])
        if config.get("profile", "default") == "full" or s.get("profile", "default") == "default"}
# The scenario settings a farm setting may override (the schema's farm.settings).
FARM_SCENARIO_KEYS = ("load", "machines", "tasks", "workload", "workload_scale", "workload_model", "chunks")
# What `sched farm-bench` reads: the scenario (its chunks), the seeds, the benchmark's counts, the
# selection's offset, the k grid and the bootstrap (and the checkpoints' validation count, which the
# selection seeds are checked against).
FARM_STEP = {**SCENARIO,
             "benchmark": [*BENCHMARK_COUNTS, *SELECTION, "atc_k_grid", "bootstrap_resamples", "bootstrap_seed",
                           "ci_level", "tie_relative", "tie_absolute_s"],
             "train": ["validation_scenarios"]}
FARM_FILES = (layout.TUNED, layout.FARM_SELECTION, layout.PER_SCENARIO, layout.FARM_TABLE, layout.FARM_VERDICT)


def farm_settings(name):
    """The settings `sched farm-bench` reads under the farm setting ``name`` (the validated config's,
    the setting's scenario keys on top)."""
    chosen = copy.deepcopy({section: _select(config[section], keys) for section, keys in FARM_STEP.items()})
    for key in FARM_SCENARIO_KEYS:
        if key in FARM[name]:
            chosen["scenario"][key] = copy.deepcopy(FARM[name][key])
    return chosen


def farm_config_text(name):
    """The config file of a farm setting's benchmark (its rerun trigger, as step_config_text's)."""
    path = layout.step_config("farm", layout.farm_root(name))
    header = (f"# Written by the workflow: the settings `sched farm-bench` depends on, under the\n"
              f"# chunked farm setting {name!r} (see config.yaml, farm.settings).\n"
              "# root: the project root, which the relative paths below are read from.\n")
    root = os.path.relpath(".", os.path.dirname(path))
    return header + yaml.safe_dump({"root": root, **farm_settings(name)}, sort_keys=True)


def farm_inputs(name):
    """The files a farm setting's scenarios are drawn from: the calibration and its workload file."""
    workload = FARM[name].get("workload") or WORKLOAD_FILE
    return ([CALIBRATION] if CALIBRATION else []) + ([workload] if workload else [])


def farm_outputs(name=None):
    """Every farm setting's files (or one's)."""
    names = [name] if name is not None else list(FARM)
    return [f"{layout.farm_root(n)}/{f}" for n in names for f in FARM_FILES]


rule farm_config:
    """Write the config file of one chunked farm setting's benchmark.
    Runs no command: the text is farm_config_text (workflow/rules/farm.smk)."""
    output:
        layout.step_config("farm", layout.farm_root("{farm}")),
    params:
        text=lambda wildcards: farm_config_text(wildcards.farm),
    log:
        layout.log("farm/{farm}/config"),
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM)) or "(?!)",
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"


rule farm_benchmark:
    """Benchmark one chunked farm setting: ATC's k at frame level on the validation seeds, the shipped
    rule chosen on its selection seeds, every rule, farm-fifo, farm-balanced, the jobs run whole and the
    shipped rule at sync 60 and 300 s on the test seeds, with paired intervals (farm.csv).
    Runs `sched farm-bench` (sched/commands/farm_bench.py -> sched.evaluate.farm.bench)."""
    input:
        config=layout.step_config("farm", layout.farm_root("{farm}")),
        calibration=lambda wildcards: farm_inputs(wildcards.farm),
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_FILES],
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        layout.log("farm/{farm}/benchmark"),
    benchmark:
        layout.usage("farm/{farm}/benchmark")
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM)) or "(?!)",
    threads: cores(1)
    priority: 40   # early, beside the main chain: one thread, which the report's last minutes leave idle
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} farm-bench --out {params.out:q}"
        " --threads {resources.job_threads} > {log:q} 2>&1"
