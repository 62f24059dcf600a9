# The benchmark: ATC's k tuned, the policies that may win on the selection
# (validation) scenarios, every policy on the test scenarios (in shards, then
# gathered: the winner is chosen on the selection and confirmed on the test
# set), and the clairvoyant reference. The robustness settings reuse tune and
# benchmark (workflow/rules/robustness.smk).
BENCH = layout.BENCH_DIR
SHARD_TABLE = f"{layout.shard_dir('{seeds}')}/{layout.PER_SCENARIO}"   # one shard's per-scenario table


rule tune:
    """Choose ATC's look-ahead k on the validation scenarios.
    Runs `sched tune` (sched/commands/tune.py -> sched.evaluate.tuning.tune_atc_k)."""
    input:
        config=PLAN.step_config("tune"),
        calibration=PLAN.calibration_input(),
    output:
        layout.TUNED_PATH,
    log:
        layout.log("tune"),
    benchmark:
        layout.usage("tune")
    threads: cores(1)
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} tune --out {output:q} --threads {resources.job_threads}"
        " > {log:q} 2>&1"


rule benchmark:
    """Run every policy on one shard (a range of test seeds) of the test scenarios.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=PLAN.step_config("benchmark"),
        calibration=PLAN.calibration_input(),
        tuned=layout.TUNED_PATH,
        policies=PLAN.policy_files(),
    output:
        SHARD_TABLE,
    params:
        policies=PLAN.bench_policies(),   # the warm starts too (ppo-<S>-warm) when training has a teacher
        seeds=wc.shard_seeds,   # robust_benchmark: the whole test set
        policy_files=PLAN.policy_file_args(),
        out=wc.output_dir,
        selection="",   # robust_benchmark: the setting's selection table, which chooses its winner
    log:
        layout.log("benchmark/{seeds}"),
    benchmark:
        layout.usage("benchmark/{seeds}")
    threads: cores(1)
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} benchmark --policies {params.policies}"
        " --seeds {params.seeds} --tuned {input.tuned:q} {params.policy_files} {params.selection}"
        " --out {params.out:q} --threads {resources.job_threads} > {log:q} 2>&1"


rule select:
    """Run the policies that may win (every rule, atc-tuned, ppo-<S>; no warm start) on the
    selection scenarios, validation seeds after those of tuning and checkpointing: the table
    winner.json is chosen on. With --split selection.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=PLAN.step_config("select"),
        calibration=PLAN.calibration_input(),
        tuned=layout.TUNED_PATH,
        policies=PLAN.policy_files(warm=False),
    output:
        layout.SELECTION_TABLE,
    params:
        policies=PLAN.select_policies(),
        seeds=PLAN.selection_seeds,
        policy_files=PLAN.policy_file_args(warm=False),
        out=wc.output_dir,
    log:
        layout.log("select"),
    benchmark:
        layout.usage("select")
    threads: cores(1)
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} benchmark --split selection --policies {params.policies}"
        " --seeds {params.seeds} --tuned {input.tuned:q} {params.policy_files}"
        " --out {params.out:q} --threads {resources.job_threads} > {log:q} 2>&1"


rule gather:
    """Join the shards and the planners' table: per-scenario table, summary with bootstrap
    intervals, and the winner, chosen on the selection table, gated by plan's candidacy, and
    confirmed on the test scenarios.
    Runs `sched gather` (sched/commands/gather.py -> sched.evaluate.per_scenario.gather)."""
    input:
        config=PLAN.step_config("verdict"),
        shards=expand(SHARD_TABLE, seeds=SHARDS),
        selection=layout.SELECTION_TABLE,
        tuned=layout.TUNED_PATH,
        policies=PLAN.policy_files(),
        candidacy=candidacy.main_tables(PLAN),
        planners=f"{layout.PLAN_BENCH_DIR}/{layout.PER_SCENARIO}",
    output:
        per_scenario=f"{BENCH}/{layout.PER_SCENARIO}",
        summary=report(f"{BENCH}/{layout.SUMMARY}", caption="../report/resume.rst",
                       category="3. Benchmark"),
        winner=f"{BENCH}/{layout.WINNER}",
    params:
        policy_files=PLAN.policy_file_args(),
        out=wc.output_dir,
        dirs=" ".join(shlex.quote(d) for d in candidacy.main_dirs(PLAN)),
    log:
        layout.log("gather"),
    benchmark:
        layout.usage("gather")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} gather {input.shards:q} --selection {input.selection:q}"
        " --plan-selection {params.dirs} --planners {input.planners:q}"
        " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q} > {log:q} 2>&1"


rule clairvoyant:
    """Run the headroom reference: a local search that knows the future.
    Runs `sched clairvoyant` (sched/commands/clairvoyant.py -> sched.evaluate.headroom.run_reference)."""
    input:
        config=PLAN.step_config("clairvoyant"),
        calibration=PLAN.calibration_input(),
    output:
        f"{BENCH}/{layout.CLAIRVOYANT}",
    log:
        layout.log("clairvoyant"),
    benchmark:
        layout.usage("clairvoyant")
    threads: cores(1)   # one thread, beside the training jobs (its result counts work, not time)
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} clairvoyant --out {output:q}"
        " --threads {resources.job_threads} > {log:q} 2>&1"


rule plan_candidacy:
    """plan's candidacy at one setting of config plan.grid: plan on the policy the selection table
    chooses (the winner), on the first plan.validation_scenarios selection seeds, those that chose
    it (paired with its totals there); plan.json records base and settings, plan.run.json the
    measured decision time (a run record). With --split selection --plan-on --plan-setting.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=PLAN.step_config("plan"),
        calibration=PLAN.calibration_input(),
        tuned=layout.TUNED_PATH,
        selection=layout.SELECTION_TABLE,
        policies=PLAN.policy_files(warm=False),
    output:
        per_scenario=f"{layout.plan_candidacy_dir('{setting}')}/{layout.PER_SCENARIO}",
        run=f"{layout.plan_candidacy_dir('{setting}')}/{PLAN_RUN}",
        times=f"{layout.plan_candidacy_dir('{setting}')}/{PLAN_TIMES}",   # a run record
    params:
        seeds=PLAN.plan_seeds,
        policy_files=PLAN.policy_file_args(warm=False),
        out=wc.output_dir,
    log:
        layout.log("plan/{setting}"),
    benchmark:
        layout.usage("plan/{setting}")
    wildcard_constraints:
        setting="|".join(map(re.escape, PLAN_SETTINGS)) or "-",
    threads: cores(1)   # one CPU: each takes twice as long as on two, but two side by side pack the run's tail better
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "NUMBA_NUM_THREADS=1 python -m sched --config {input.config:q} benchmark --split selection"
        " --policies plan --plan-on {input.selection:q} --plan-setting {wildcards.setting}"
        " --seeds {params.seeds} --tuned {input.tuned:q} {params.policy_files}"
        " --out {params.out:q} --threads {resources.job_threads} > {log:q} 2>&1"


rule benchmark_plan:
    """plan at the setting its candidacy picks (the rule: sched.verdict.candidacy.choose_setting), on the
    winner, on every test seed; in the longer run the gated teacher run as a policy (teacher) too.
    gather joins the table to the shards'. With --plan-on --plan-candidacy.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=PLAN.step_config("plan"),
        calibration=PLAN.calibration_input(),
        tuned=layout.TUNED_PATH,
        selection=layout.SELECTION_TABLE,
        candidacy=expand(rules.plan_candidacy.output.run, setting=PLAN_SETTINGS),
        tables=expand(rules.plan_candidacy.output.per_scenario, setting=PLAN_SETTINGS),
        policies=PLAN.policy_files(warm=False),
    output:
        f"{layout.PLAN_BENCH_DIR}/{layout.PER_SCENARIO}",
    params:
        policies=PLAN.planners(),
        seeds=TEST_SEEDS,
        dirs=wc.candidacy_dirs,
        policy_files=PLAN.policy_file_args(warm=False),
        out=wc.output_dir,
    log:
        layout.log("benchmark/plan"),
    benchmark:
        layout.usage("benchmark/plan")
    threads: cores(1)   # one CPU: each takes twice as long as on two, but two side by side pack the run's tail better
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "NUMBA_NUM_THREADS=1 python -m sched --config {input.config:q} benchmark --policies {params.policies}"
        " --plan-on {input.selection:q} --plan-candidacy {params.dirs} --seeds {params.seeds}"
        " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q}"
        " --threads {resources.job_threads} > {log:q} 2>&1"
