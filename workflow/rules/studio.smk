# The studio setting (sched/pipeline/studio.py; docs/workload.md, "The studio setting"): the
# queue's own fitted workload, built when the config names a history. Its policies train on
# scenarios drawn from results/workload.json (the robustness rules, workflow/rules/robustness.smk,
# under the setting named studio); here its own steps: the fidelity check of the generator, ATC's
# k weighed on the validation days too, the replays of the validation and held-out days, and its
# benchmark, whose verdict those weigh and confirm. All under results/robustness/studio/.


if STUDIO in ROBUST:
    STUDIO_ROOT = layout.robust_root(STUDIO)
    STREAMS, SCENARIOS, TAU = studio.fidelity_options(config)   # studio.fidelity_*
    REPLAY_STEP = candidacy.studio_replay_step(PLAN)   # replay's config, or replay_plan's with plan
    REPLAY_PLAN, REPLAY_PLAN_ARGS = candidacy.studio_replay_args(PLAN)   # plan at its candidacy's pick

    rule studio_fidelity:
        """Compare the validation days with scenarios generated from the fit over the same hours (a
        warm-up day first) and with generated validation scenarios: fidelity.csv, .json and .png.
        Runs `sched fidelity` (sched/commands/fidelity.py -> sched.data.workload.fidelity.check)."""
        input:
            config=PLAN.step_config("select", STUDIO),
            calibration=CALIBRATION,
            history=HISTORY,
            workload=layout.WORKLOAD,
        output:
            studio.fidelity_files(),
        params:
            out=wc.output_dir,
            streams=STREAMS,
            scenarios=SCENARIOS,
            tau=TAU,
        log:
            layout.log(f"robustness/{STUDIO}/fidelity"),
        benchmark:
            layout.usage(f"robustness/{STUDIO}/fidelity")
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
            config=PLAN.step_config("tune", STUDIO),
            calibration=PLAN.calibration_input(STUDIO),
            history=HISTORY,
            fidelity=studio.fidelity_files()[1],
        output:
            f"{STUDIO_ROOT}/{layout.TUNED}",
        log:
            layout.log(f"robustness/{STUDIO}/tune"),
        benchmark:
            layout.usage(f"robustness/{STUDIO}/tune")
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
            config=PLAN.step_config(REPLAY_STEP, STUDIO),
            calibration=CALIBRATION,
            history=HISTORY,
            workload=layout.WORKLOAD,
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=PLAN.policy_files(STUDIO),
            plan=candidacy.studio_replay_inputs(PLAN),
        output:
            studio.validation_day_files(),
        params:
            policies=PLAN.bench_policies(STUDIO) + REPLAY_PLAN,
            policy_files=PLAN.policy_file_args(STUDIO),
            plan=REPLAY_PLAN_ARGS,   # plan at its candidacy's pick (config plan.elsewhere)
            out=wc.output_dir,
        log:
            layout.log(f"robustness/{STUDIO}/replay-validation"),
        benchmark:
            layout.usage(f"robustness/{STUDIO}/replay-validation")
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
            config=PLAN.step_config(REPLAY_STEP, STUDIO),
            calibration=CALIBRATION,
            history=HISTORY,
            workload=layout.WORKLOAD,
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=PLAN.policy_files(STUDIO),
            plan=candidacy.studio_replay_inputs(PLAN),
        output:
            studio.held_out_files(),
        params:
            policies=PLAN.bench_policies(STUDIO) + REPLAY_PLAN,
            policy_files=PLAN.policy_file_args(STUDIO),
            plan=REPLAY_PLAN_ARGS,   # plan at its candidacy's pick (config plan.elsewhere)
            out=wc.output_dir,
        log:
            layout.log(f"robustness/{STUDIO}/replay"),
        benchmark:
            layout.usage(f"robustness/{STUDIO}/replay")
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
            config=PLAN.step_config(candidacy.verdict_step(PLAN, STUDIO), STUDIO),
            calibration=PLAN.calibration_input(STUDIO),
            tuned=f"{STUDIO_ROOT}/{layout.TUNED}",
            policies=PLAN.policy_files(STUDIO),
            selection=layout.robust_selection_table(STUDIO),
            plan=candidacy.inputs_under(PLAN, STUDIO),
            held_out=studio.held_out_files()[0],
            validation_days=studio.validation_day_files()[0],
            fidelity=studio.fidelity_files()[1],
        output:
            per_scenario=f"{STUDIO_ROOT}/{layout.PER_SCENARIO}",
            summary=f"{STUDIO_ROOT}/{layout.SUMMARY}",
            winner=f"{STUDIO_ROOT}/{layout.WINNER}",
        params:
            policies=PLAN.bench_policies(STUDIO),
            seeds=TEST_SEEDS,
            policy_files=PLAN.policy_file_args(STUDIO),
            selection=WC.studio_selection_arg,
        log:
            layout.log(f"robustness/{STUDIO}/benchmark"),
        benchmark:
            layout.usage(f"robustness/{STUDIO}/benchmark")
