# The benchmark under other settings (config robustness.settings): per setting,
# ATC's k tuned for it, optionally the policies retrained for it, and the whole
# test set benchmarked in one job, all under results/robustness/<name>/. Each
# rule is its main counterpart (same command, threads and shadow) with the
# setting's config files, inputs and outputs.
ROBUST_ROOT = PLAN.results_root("{setting}")   # the folder of the setting named by the wildcard


use rule step_config as robust_config with:
    """Write a step's config file under one robustness setting.
    Runs no command: the text is Plan.step_config_text (sched/pipeline/plan.py)."""
    output:
        PLAN.step_config("{step}", "{setting}"),
    params:
        text=WC.step_config_text,
    log:
        layout.log("robustness/{setting}/config-{step}"),
    # instant: written at once, so that no job of a setting waits for its config behind the main
    # chain (priorities do not pass to a job's inputs)
    priority: 50
    wildcard_constraints:
        setting="|".join(ROBUST) or "^$",
        step="|".join(steps.SETTING_STEPS),


use rule tune as robust_tune with:
    """Choose ATC's k on the validation scenarios of one robustness setting.
    Runs `sched tune` (sched/commands/tune.py -> sched.evaluate.tuning.tune_atc_k)."""
    input:
        config=PLAN.step_config("tune", "{setting}"),
        calibration=WC.calibration,
    output:
        f"{ROBUST_ROOT}/{layout.TUNED}",
    log:
        layout.log("robustness/{setting}/tune"),
    benchmark:
        layout.usage("robustness/{setting}/tune")
    wildcard_constraints:   # the studio's: workflow/rules/studio.smk (its k is also weighed on the validation days)
        setting=PLAN.other_settings(),


use rule teach as robust_teach with:
    """Label one shard of the training seeds for a robustness setting that retrains.
    Runs `sched teach` (sched/commands/teach.py -> sched.learn.search.teacher.make_labels)."""
    input:
        config=PLAN.step_config("teach", "{setting}"),
        calibration=WC.calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
    output:
        layout.teacher_labels("{seeds}", ROBUST_ROOT),
    params:
        atc_k=WC.atc_k_arg,
    log:
        layout.log("robustness/{setting}/teach-{seeds}"),
    benchmark:
        layout.usage("robustness/{setting}/teach-{seeds}")


use rule train as robust_train with:
    """Retrain a policy for one robustness setting whose training has no teacher (PPO from the
    ATC prior alone), per training seed.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.loop.train)."""
    input:
        config=PLAN.step_config("train", "{setting}"),
        calibration=WC.calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
    output:
        policy=layout.policy_file("{seed}", ROBUST_ROOT),
        log_csv=layout.train_log("{seed}", ROBUST_ROOT),
        run_csv=layout.train_run_log("{seed}", ROBUST_ROOT),
        curve=layout.learning_curve("{seed}", ROBUST_ROOT),
    params:
        atc_k=WC.atc_k_arg,
        progress="--no-progress",
        teacher="",
        init="",
    log:
        layout.log("robustness/{setting}/train-seed-{seed}"),
    benchmark:
        layout.usage("robustness/{setting}/train-seed-{seed}")
    wildcard_constraints:
        setting=PLAN.teach_settings(False),


# A setting whose training has a teacher also writes the warm start, warm_start.pt: a rule
# of its own, as a rule's outputs cannot depend on the wildcard.
use rule train as robust_train_warm with:
    """Retrain a policy for one robustness setting, warm-started from the setting's teacher
    labels (the warm start is an output too, warm_start.pt), per training seed.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.loop.train)."""
    input:
        config=PLAN.step_config("train", "{setting}"),
        calibration=WC.calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        teacher=WC.teacher_files,
    output:
        policy=layout.policy_file("{seed}", ROBUST_ROOT),
        log_csv=layout.train_log("{seed}", ROBUST_ROOT),
        run_csv=layout.train_run_log("{seed}", ROBUST_ROOT),
        curve=layout.learning_curve("{seed}", ROBUST_ROOT),
        warm=layout.warm_policy_file("{seed}", ROBUST_ROOT),
    params:
        teacher=wc.teacher_arg,
        init="",
        atc_k=WC.atc_k_arg,
        progress="--no-progress",
    log:
        layout.log("robustness/{setting}/train-seed-{seed}"),
    benchmark:
        layout.usage("robustness/{setting}/train-seed-{seed}")
    wildcard_constraints:
        setting=PLAN.teach_settings(True),


use rule select as robust_select with:
    """Run the policies that may win one robustness setting's winner.json on its selection
    (validation) scenarios.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=PLAN.step_config("select", "{setting}"),
        calibration=WC.calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        policies=WC.final_policy_files,
    output:
        layout.robust_selection_table("{setting}"),
    params:
        policies=WC.select_policies,
        seeds=WC.selection_seeds,
        policy_files=WC.final_policy_file_args,
        out=wc.output_dir,
    log:
        layout.log("robustness/{setting}/select"),
    benchmark:
        layout.usage("robustness/{setting}/select")
    wildcard_constraints:
        setting="|".join(ROBUST) or "^$",


use rule benchmark as robust_benchmark with:
    """Run every policy on the whole test set under one robustness setting: per-scenario
    table, summary, and the winner, chosen on the setting's selection table and confirmed there.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        # gather's settings: a full run also writes the summary (with plan's, verdict's)
        config=WC.verdict_config,
        calibration=WC.calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        policies=WC.policy_files,
        selection=layout.robust_selection_table("{setting}"),
        plan=WC.plan_inputs,
    output:
        per_scenario=f"{ROBUST_ROOT}/{layout.PER_SCENARIO}",
        summary=f"{ROBUST_ROOT}/{layout.SUMMARY}",
        winner=f"{ROBUST_ROOT}/{layout.WINNER}",
    params:
        policies=WC.bench_policies,
        seeds=TEST_SEEDS,
        policy_files=WC.policy_file_args,
        selection=WC.selection_arg,
    log:
        layout.log("robustness/{setting}/benchmark"),
    benchmark:
        layout.usage("robustness/{setting}/benchmark")
    wildcard_constraints:   # not a selection table under the setting's folder; the studio's: workflow/rules/studio.smk
        setting=PLAN.other_settings(),


# plan's candidacy under the robustness settings and the studio (config plan.elsewhere; issue 46):
# the main setting's two rules, under each setting, on its winner and its own validation seeds
if PLAN_ELSEWHERE:

    rule robust_plan_candidacy:
        """plan's candidacy at one setting of plan.elsewhere.grid under one robustness setting: plan on
        the policy the setting's selection table chooses, on its first plan.validation_scenarios
        selection seeds, paired with its totals there.
        Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
        input:
            config=PLAN.step_config("plan", "{setting}"),
            calibration=WC.calibration,
            tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
            selection=layout.robust_selection_table("{setting}"),
            policies=WC.final_policy_files,
        output:
            per_scenario=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{layout.PER_SCENARIO}",
            run=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{PLAN_RUN}",
            times=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{PLAN_TIMES}",   # a run record
        params:
            seeds=WC.plan_seeds,
            policy_files=WC.final_policy_file_args,
            out=wc.output_dir,
        log:
            layout.log("robustness/{setting}/plan-{grid}"),
        benchmark:
            layout.usage("robustness/{setting}/plan-{grid}")
        wildcard_constraints:
            setting="|".join(map(re.escape, ROBUST)) or "^$",
            grid="|".join(map(re.escape, PLAN_ELSEWHERE)),
        threads: cores(2)   # plan's scenarios run on two threads (sched.evaluate.runs.schedule_policy)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "NUMBA_NUM_THREADS=1 python -m sched --config {input.config:q} benchmark --split selection"
            " --policies plan --plan-on {input.selection:q} --plan-setting {wildcards.grid}"
            " --seeds {params.seeds} --tuned {input.tuned:q} {params.policy_files}"
            " --out {params.out:q} --threads {resources.job_threads} > {log:q} 2>&1"


    rule robust_benchmark_plan:
        """plan at the setting its candidacy picks under one robustness setting, on its winner, on
        every test seed; the setting's benchmark joins the table (--planners).
        Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
        input:
            config=PLAN.step_config("plan", "{setting}"),
            calibration=WC.calibration,
            tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
            selection=layout.robust_selection_table("{setting}"),
            candidacy=WC.candidacy_runs,
            tables=WC.candidacy_tables,
            policies=WC.final_policy_files,
        output:
            f"{layout.robust_plan_dir('{setting}')}/{layout.PER_SCENARIO}",
        params:
            seeds=TEST_SEEDS,
            dirs=wc.candidacy_dirs,
            policy_files=WC.final_policy_file_args,
            out=wc.output_dir,
        log:
            layout.log("robustness/{setting}/benchmark-plan"),
        benchmark:
            layout.usage("robustness/{setting}/benchmark-plan")
        wildcard_constraints:
            setting="|".join(map(re.escape, ROBUST)) or "^$",
        threads: cores(2)
        resources:
            job_threads=job_threads,
        shadow:
            "minimal"
        shell:
            "NUMBA_NUM_THREADS=1 python -m sched --config {input.config:q} benchmark --policies plan"
            " --plan-on {input.selection:q} --plan-candidacy {params.dirs} --seeds {params.seeds}"
            " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q}"
            " --threads {resources.job_threads} > {log:q} 2>&1"
