# The benchmark under other settings (config robustness.settings): per setting,
# ATC's k tuned for it, optionally the policies retrained for it, and the whole
# test set benchmarked in one job, all under results/robustness/<name>/. Each
# rule is its main counterpart (same command, threads and shadow) with the
# setting's config files, inputs and outputs.
ROBUST_ROOT = results_root("{setting}")   # the folder of the setting named by the wildcard


use rule step_config as robust_config with:
    """Write a step's config file under one robustness setting.
    Runs no command: the text is step_config_text (workflow/rules/common.smk)."""
    output:
        step_config("{step}", "{setting}"),
    params:
        text=lambda wildcards: step_config_text(wildcards.step, wildcards.setting),
    log:
        layout.log("robustness/{setting}/config-{step}"),
    # instant: written at once, so that no job of a setting waits for its config behind the main
    # chain (priorities do not pass to a job's inputs)
    priority: 50
    wildcard_constraints:
        setting="|".join(ROBUST) or "^$",
        step="tune|teach|train|select|gather|replay|plan|verdict|replay_plan",


use rule tune as robust_tune with:
    """Choose ATC's k on the validation scenarios of one robustness setting.
    Runs `sched tune` (sched/commands/tune.py -> sched.evaluate.tuning.tune_atc_k)."""
    input:
        config=step_config("tune", "{setting}"),
        calibration=setting_calibration,
    output:
        f"{ROBUST_ROOT}/{layout.TUNED}",
    log:
        layout.log("robustness/{setting}/tune"),
    benchmark:
        layout.usage("robustness/{setting}/tune")
    wildcard_constraints:   # the studio's below: its k is also weighed on the validation days
        setting="|".join(n for n in ROBUST if n != STUDIO) or "^$",


use rule teach as robust_teach with:
    """Label one shard of the training seeds for a robustness setting that retrains.
    Runs `sched teach` (sched/commands/teach.py -> sched.learn.search.teacher.make_labels)."""
    input:
        config=step_config("teach", "{setting}"),
        calibration=setting_calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
    output:
        layout.teacher_labels("{seeds}", ROBUST_ROOT),
    params:
        atc_k=lambda wildcards, input: atc_k_arg(wildcards.setting, input.tuned),
    log:
        layout.log("robustness/{setting}/teach-{seeds}"),
    benchmark:
        layout.usage("robustness/{setting}/teach-{seeds}")


use rule train as robust_train with:
    """Retrain a policy for one robustness setting whose training has no teacher (PPO from the
    ATC prior alone), per training seed.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.loop.train)."""
    input:
        config=step_config("train", "{setting}"),
        calibration=setting_calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
    output:
        policy=layout.policy_file("{seed}", ROBUST_ROOT),
        log_csv=layout.train_log("{seed}", ROBUST_ROOT),
        run_csv=layout.train_run_log("{seed}", ROBUST_ROOT),
        curve=layout.learning_curve("{seed}", ROBUST_ROOT),
    params:
        atc_k=lambda wildcards, input: atc_k_arg(wildcards.setting, input.tuned),
        progress="--no-progress",
        teacher="",
        init="",
    log:
        layout.log("robustness/{setting}/train-seed-{seed}"),
    benchmark:
        layout.usage("robustness/{setting}/train-seed-{seed}")
    wildcard_constraints:
        setting=teach_settings(False),


# A setting whose training has a teacher also writes the warm start, warm_start.pt: a rule
# of its own, as a rule's outputs cannot depend on the wildcard.
use rule train as robust_train_warm with:
    """Retrain a policy for one robustness setting, warm-started from the setting's teacher
    labels (the warm start is an output too, warm_start.pt), per training seed.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.loop.train)."""
    input:
        config=step_config("train", "{setting}"),
        calibration=setting_calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        teacher=lambda wildcards: teacher_files(wildcards.setting),
    output:
        policy=layout.policy_file("{seed}", ROBUST_ROOT),
        log_csv=layout.train_log("{seed}", ROBUST_ROOT),
        run_csv=layout.train_run_log("{seed}", ROBUST_ROOT),
        curve=layout.learning_curve("{seed}", ROBUST_ROOT),
        warm=layout.warm_policy_file("{seed}", ROBUST_ROOT),
    params:
        teacher=lambda wildcards, input: "--teacher " + " ".join(shlex.quote(p) for p in input.teacher),
        init="",
        atc_k=lambda wildcards, input: atc_k_arg(wildcards.setting, input.tuned),
        progress="--no-progress",
    log:
        layout.log("robustness/{setting}/train-seed-{seed}"),
    benchmark:
        layout.usage("robustness/{setting}/train-seed-{seed}")
    wildcard_constraints:
        setting=teach_settings(True),


use rule select as robust_select with:
    """Run the policies that may win one robustness setting's winner.json on its selection
    (validation) scenarios.
    Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
    input:
        config=step_config("select", "{setting}"),
        calibration=setting_calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        policies=lambda wildcards: policy_files(wildcards.setting, warm=False),
    output:
        layout.robust_selection_table("{setting}"),
    params:
        policies=lambda wildcards: select_policies(wildcards.setting),
        seeds=lambda wildcards: setting_selection_seeds(wildcards.setting),
        policy_files=lambda wildcards: policy_file_args(wildcards.setting, warm=False),
        out=lambda wildcards, output: os.path.dirname(output[0]),
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
        config=lambda wildcards: step_config(verdict_step(wildcards.setting), wildcards.setting),
        calibration=setting_calibration,
        tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
        policies=lambda wildcards: policy_files(wildcards.setting),
        selection=layout.robust_selection_table("{setting}"),
        plan=lambda wildcards: robust_plan_inputs(wildcards.setting),
    output:
        per_scenario=f"{ROBUST_ROOT}/{layout.PER_SCENARIO}",
        summary=f"{ROBUST_ROOT}/{layout.SUMMARY}",
        winner=f"{ROBUST_ROOT}/{layout.WINNER}",
    params:
        policies=lambda wildcards: bench_policies(wildcards.setting),
        seeds=TEST_SEEDS,
        policy_files=lambda wildcards: policy_file_args(wildcards.setting),
        selection=lambda wildcards, input: f"--selection {input.selection} {robust_plan_args(wildcards.setting)}",
    log:
        layout.log("robustness/{setting}/benchmark"),
    benchmark:
        layout.usage("robustness/{setting}/benchmark")
    wildcard_constraints:   # not a selection table under the setting's folder; the studio's below
        setting="|".join(n for n in ROBUST if n != STUDIO) or "^$",


if STUDIO in ROBUST:
    STUDIO_ROOT = layout.robust_root(STUDIO)

    rule studio_fidelity:
        """Compare the validation days with scenarios generated from the fit over the same hours (a
        warm-up day first) and with generated validation scenarios: fidelity.csv, .json and .png.
        Runs `sched fidelity` (sched/commands/fidelity.py -> sched.data.workload.fidelity.check)."""
        input:
            config=step_config("select", STUDIO),
            calibration=[CALIBRATION] if CALIBRATION else [],
            history=HISTORY,
            workload=layout.WORKLOAD,
        output:
            studio_fidelity(),
        params:
            out=lambda wildcards, output: os.path.dirname(output[0]),
            streams=(config.get("studio") or {}).get("fidelity_streams", 16),
            scenarios=(config.get("studio") or {}).get("fidelity_scenarios", 128),
            tau=(config.get("studio") or {}).get("fidelity_tau", 0.8),
        log:
            layout.log("robustness/studio/fidelity"),
        benchmark:
            layout.usage("robustness/studio/fidelity")
        # cheap, and they unlock the studio's training: started early, the studio's chain does not
        # end the workflow alone on one core (docs/workflow.md)
        priority: 25
        threads: cores(1)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} fidelity {input.history:q} --workload {input.workload:q}"
            " --streams {params.streams} --scenarios {params.scenarios} --threshold {params.tau} --out {params.out:q} --threads {resources.job_threads}"
            " > {log:q} 2>&1"


    rule studio_tune:
        """Choose ATC's k on the studio's generated validation scenarios, kept only when at most 5 %
        worse than rules.atc_k on the validation days (chosen there alone when the fidelity check
        says the generator ranks the rules unlike them).
        Runs `sched tune` (sched/commands/tune.py -> sched.evaluate.tuning.tune_atc_k)."""
        input:
            config=step_config("tune", STUDIO),
            calibration=calibration_input(STUDIO),
            history=HISTORY,
            fidelity=studio_fidelity()[1],
        output:
            f"{STUDIO_ROOT}/{layout.TUNED}",
        log:
            layout.log("robustness/studio/tune"),
        benchmark:
            layout.usage("robustness/studio/tune")
        priority: 25
        threads: cores(1)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} tune --out {output:q} --threads {resources.job_threads}"
            " --validation-days {input.history:q} --fidelity {input.fidelity:q} > {log:q} 2>&1"


    rule studio_validation_replay:
        """Run every policy of the studio setting on its validation days, replayed as one stream
        (--validation): what the verdict is weighed on with the generated validation scenarios.
        Runs `sched replay` (sched/commands/replay.py -> sched.data.workload.replay.held_out_stream,
        sched.evaluate.runs.run_on_stream)."""
        input:
            config=step_config(studio_replay_step(), STUDIO),
            calibration=[CALIBRATION] if CALIBRATION else [],
            history=HISTORY,
            workload=layout.WORKLOAD,
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=policy_files(STUDIO),
            plan=studio_replay_plan_inputs(),
        output:
            studio_validation_days(),
        params:
            policies=bench_policies(STUDIO) + studio_replay_plan_args()[0],
            policy_files=policy_file_args(STUDIO),
            plan=studio_replay_plan_args()[1],   # plan at its candidacy's pick (config plan.elsewhere)
            out=lambda wildcards, output: os.path.dirname(output[0]),
        log:
            layout.log("robustness/studio/replay-validation"),
        benchmark:
            layout.usage("robustness/studio/replay-validation")
        threads: cores(1)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} replay {input.history:q} --validation {input.workload:q}"
            " --policies {params.policies} --tuned {input.tuned:q} {params.policy_files} {params.plan}"
            " --out {params.out:q}"
            " --threads {resources.job_threads} > {log:q} 2>&1"


    rule studio_replay:
        """Run every policy of the studio setting (the rules, atc-tuned, its ppo-<S> and their warm
        starts, the main setting's policies as main-ppo-<S>) on the days the fit held out, replayed as
        one continuous stream (--held-out); a row per day.
        Runs `sched replay` (sched/commands/replay.py -> sched.data.workload.replay.held_out_stream,
        sched.evaluate.runs.run_on_stream)."""
        input:
            config=step_config(studio_replay_step(), STUDIO),
            calibration=[CALIBRATION] if CALIBRATION else [],
            history=HISTORY,
            workload=layout.WORKLOAD,
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=policy_files(STUDIO),
            plan=studio_replay_plan_inputs(),
        output:
            studio_held_out(),
        params:
            policies=bench_policies(STUDIO) + studio_replay_plan_args()[0],
            policy_files=policy_file_args(STUDIO),
            plan=studio_replay_plan_args()[1],   # plan at its candidacy's pick (config plan.elsewhere)
            out=lambda wildcards, output: os.path.dirname(output[0]),
        log:
            layout.log("robustness/studio/replay"),
        benchmark:
            layout.usage("robustness/studio/replay")
        threads: cores(1)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} replay {input.history:q} --held-out {input.workload:q}"
            " --policies {params.policies} --tuned {input.tuned:q} {params.policy_files} {params.plan}"
            " --out {params.out:q}"
            " --threads {resources.job_threads} > {log:q} 2>&1"


    use rule benchmark as studio_benchmark with:
        """Run every policy of the studio setting on its test scenarios (drawn from the fit): the
        winner is chosen on its selection table, weighed on the validation days (--validation-days,
        --fidelity), confirmed on these and on the held-out days (--held-out: against the
        validation days' best rule; without validation days, the earlier gate).
        Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies,
        sched.verdict.outputs.write_outputs)."""
        input:
            config=step_config(verdict_step(STUDIO), STUDIO),
            calibration=calibration_input(STUDIO),
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=policy_files(STUDIO),
            selection=layout.robust_selection_table(STUDIO),
            plan=robust_plan_inputs(STUDIO),
            held_out=studio_held_out()[0],
            validation_days=studio_validation_days()[0],
            fidelity=studio_fidelity()[1],
        output:
            per_scenario=f"{STUDIO_ROOT}/{layout.PER_SCENARIO}",
            summary=f"{STUDIO_ROOT}/{layout.SUMMARY}",
            winner=f"{STUDIO_ROOT}/{layout.WINNER}",
        params:
            policies=bench_policies(STUDIO),
            seeds=TEST_SEEDS,
            policy_files=policy_file_args(STUDIO),
            selection=lambda wildcards, input: (
                f"--selection {input.selection} {robust_plan_args(STUDIO)} --held-out {input.held_out}"
                f" --validation-days {input.validation_days} --fidelity {input.fidelity}"
            ),
        log:
            layout.log("robustness/studio/benchmark"),
        benchmark:
            layout.usage("robustness/studio/benchmark")


# plan's candidacy under the robustness settings and the studio (config plan.elsewhere; issue 46):
# the main setting's two rules, under each setting, on its winner and its own validation seeds
if PLAN_ELSEWHERE:

    rule robust_plan_candidacy:
        """plan's candidacy at one setting of plan.elsewhere.grid under one robustness setting: plan on
        the policy the setting's selection table chooses, on its first plan.validation_scenarios
        selection seeds, paired with its totals there.
        Runs `sched benchmark` (sched/commands/benchmark.py -> sched.evaluate.runs.run_policies)."""
        input:
            config=step_config("plan", "{setting}"),
            calibration=setting_calibration,
            tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
            selection=layout.robust_selection_table("{setting}"),
            policies=lambda wildcards: policy_files(wildcards.setting, warm=False),
        output:
            per_scenario=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{layout.PER_SCENARIO}",
            run=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{PLAN_RUN}",
            times=f"{layout.plan_candidacy_dir('{grid}', '{setting}')}/{PLAN_TIMES}",   # a run record
        params:
            seeds=lambda wildcards: setting_plan_seeds(wildcards.setting),
            policy_files=lambda wildcards: policy_file_args(wildcards.setting, warm=False),
            out=lambda wildcards, output: os.path.dirname(output.per_scenario),
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
            config=step_config("plan", "{setting}"),
            calibration=setting_calibration,
            tuned=f"{ROBUST_ROOT}/{layout.TUNED}",
            selection=layout.robust_selection_table("{setting}"),
            candidacy=lambda wildcards: [f"{d}/{PLAN_RUN}" for d in robust_candidacy_dirs(wildcards.setting)],
            tables=lambda wildcards: [f"{d}/{layout.PER_SCENARIO}" for d in robust_candidacy_dirs(wildcards.setting)],
            policies=lambda wildcards: policy_files(wildcards.setting, warm=False),
        output:
            f"{layout.robust_plan_dir('{setting}')}/{layout.PER_SCENARIO}",
        params:
            seeds=TEST_SEEDS,
            dirs=lambda wildcards, input: " ".join(shlex.quote(os.path.dirname(p)) for p in input.candidacy),
            policy_files=lambda wildcards: policy_file_args(wildcards.setting, warm=False),
            out=lambda wildcards, output: os.path.dirname(output[0]),
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
