# The workload from the queue's own history (docs/workload.md), when config
# workload.history names history files: its fit (results/workload.json, which
# scenario.workload may name, so that training and the benchmark follow it) and
# its replay as a test set (results/replay/), read by the report.
# Without a history (workload.history: []) neither rule exists: the workflow is unchanged.


if HISTORY:

    # A checkpoint: whether the studio setting is built depends on its output (the days it held out).
    checkpoint calibrate_workload:
        """Fit the weekly arrival profile, priority mix and deadline allowances to the queue history,
        holding its last workload.test_days days out.
        Runs `sched calibrate-workload` (sched/commands/calibrate_workload.py ->
        sched.data.workload.workload_fit.calibrate_workload)."""
        input:
            config=PLAN.step_config("calibrate_workload"),
            calibration=CALIBRATION,
            history=HISTORY,
        output:
            json=layout.WORKLOAD,
            png=report(layout.WORKLOAD_FIGURE, caption="../report/workload.rst", category="1. Calibration"),
        params:
            calibration=wc.calibration_arg,
        log:
            layout.log("calibrate-workload"),
        benchmark:
            layout.usage("calibrate-workload")
        threads: cores(1)
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} calibrate-workload {input.history:q}"
            " {params.calibration} --out {output.json:q} --figure {output.png:q} > {log:q} 2>&1"


    rule workload_frames:
        """Fit frames per job and time per frame by kind and class to the history's optional frames
        column (issue 59, point 6), beside results/workload.json, which keeps its bytes; a history
        without frames gives a fit of no kind.
        Runs `sched calibrate-frames` (sched/commands/calibrate_frames.py ->
        sched.data.frames_fit.fit_history)."""
        input:
            config=PLAN.step_config("calibrate_workload"),
            history=HISTORY,
        output:
            json=layout.WORKLOAD_FRAMES_FIT,
        log:
            layout.log("workload-frames"),
        benchmark:
            layout.usage("workload-frames")
        threads: cores(1)
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} calibrate-frames --history {input.history:q}"
            " --allow-empty --out {output.json:q} > {log:q} 2>&1"


    rule replay:
        """Run every policy on the queue history cut into days, each a scenario with its real tasks.
        Runs `sched replay` (sched/commands/replay.py -> sched.data.workload.replay.replay_scenarios,
        sched.evaluate.runs.run_on_scenarios)."""
        input:
            config=PLAN.step_config("replay"),
            calibration=CALIBRATION,
            history=HISTORY,
            tuned=layout.TUNED_PATH,
            policies=PLAN.policy_files(),
        output:
            PLAN.replay_outputs(),
        params:
            policies=PLAN.bench_policies(),
            policy_files=PLAN.policy_file_args(),
            out=wc.output_dir,  # layout.REPLAY_DIR
        log:
            layout.log("replay"),
        benchmark:
            layout.usage("replay")
        threads: cores(1)
        resources:
            job_threads=job_threads,   # its --threads: the threads, not the reservation
        shadow:
            "minimal"
        shell:
            "python -m sched --config {input.config:q} replay {input.history:q} --policies {params.policies}"
            " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q} --threads {resources.job_threads}"
            " > {log:q} 2>&1"


rule trace_workload:
    """Write the trace-like synthetic history (class-dependent heavy-tailed durations, days of very
    different load; not a real trace) and fit it, for a robustness setting that draws from it
    (config robustness.settings: `workload: results/trace/workload.json`; issue 50). The history
    comes from resources/history/make_trace_history.py (seeded: the same bytes every run).
    Runs `sched calibrate-workload` (sched/commands/calibrate_workload.py ->
    sched.data.workload.workload_fit.calibrate_workload)."""
    input:
        config=PLAN.step_config("calibrate_workload"),
        script="resources/history/make_trace_history.py",
        example="resources/history/make_example_history.py",  # its weekly profile and queue
        bench="resources/bench/make_example_logs.py",  # the calibration's truth, for the estimates
        calibration=CALIBRATION,
    output:
        history=layout.TRACE_HISTORY,
        json=layout.TRACE_WORKLOAD,
        png=layout.TRACE_WORKLOAD_FIGURE,
    params:
        calibration=wc.calibration_arg,
    log:
        layout.log("trace-workload"),
    benchmark:
        layout.usage("trace-workload")
    threads: cores(1)
    priority: 40   # early, beside the main chain: the farm settings and heavy-tails wait on it (docs/workflow.md)
    shadow:
        "minimal"
    shell:
        "(python {input.script:q} {output.history:q} && python -m sched --config {input.config:q}"
        " calibrate-workload {output.history:q} {params.calibration} --out {output.json:q}"
        " --figure {output.png:q}) > {log:q} 2>&1"


rule trace_frames:
    """Write the trace-like synthetic history again with frames per job by its documented rule
    (make_trace_history.py --frames; issue 59, point 6) into a file of its own, so that
    results/trace/history.csv and its fit keep their bytes, and fit its frames by kind and class (`--history`).
    Runs `sched calibrate-frames` (sched/commands/calibrate_frames.py ->
    sched.data.frames_fit.fit_history)."""
    input:
        config=PLAN.step_config("calibrate_workload"),
        script="resources/history/make_trace_history.py",
        example="resources/history/make_example_history.py",  # its weekly profile and queue
        bench="resources/bench/make_example_logs.py",  # the calibration's truth, for the estimates
    output:
        history=layout.TRACE_FRAMES_HISTORY,
        json=layout.TRACE_FRAMES_FIT,
    log:
        layout.log("trace-frames"),
    benchmark:
        layout.usage("trace-frames")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "(python {input.script:q} {output.history:q} --frames && python -m sched --config {input.config:q}"
        " calibrate-frames --history {output.history:q} --out {output.json:q}) > {log:q} 2>&1"
