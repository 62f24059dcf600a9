# The demonstration scenario and the report.
FIGURES = layout.FIGURES_DIR
REPORT_FIGURES = {   # the report's benchmark and training figures, with their captions
    "benchmark_mean_ci.png": "benchmark_mean_ci.rst",
    "benchmark_paired_vs_atc.png": "benchmark_paired_vs_atc.rst",
    "benchmark_ecdf.png": "benchmark_ecdf.rst",
    "learning_curves.png": "learning_curves.rst",
    "learning_by_chain.png": "learning_by_chain.rst",
}


rule demo:
    """Run the demonstration scenario under every policy, and draw its Gantt chart.
    Runs `sched demo` (sched/commands/demo.py -> sched.evaluate.demo.run_demo,
    sched.report.figures.gantt)."""
    input:
        config=PLAN.step_config("demo"),
        calibration=PLAN.calibration_input(),
        tuned=layout.TUNED_PATH,
        policies=PLAN.policy_files(warm=False),   # the demo runs the final policies, not the warm starts
    output:
        table=f"{layout.DEMO_DIR}/{layout.DEMO_TABLE}",
        schedules=[layout.demo_schedule(p) for p in PLAN.policies],
        gantt=report(f"{FIGURES}/{layout.DEMO_GANTT}", caption="../report/demo_gantt.rst",
                     category="4. Demonstration"),
    params:
        policies=",".join(PLAN.policies),
        policy_files=PLAN.policy_file_args(warm=False),
        out=wc.output_dir,
        figures=wc.gantt_dir,
    log:
        layout.log("demo"),
    benchmark:
        layout.usage("demo")
    threads: cores(1)
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} demo --policies {params.policies}"
        " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q}"
        " --figures {params.figures:q} --threads {resources.job_threads} > {log:q} 2>&1"


rule report:
    """Write rapport.md and the benchmark figures from the files above.
    Runs `sched report` (sched/commands/report.py -> sched.report.document.build)."""
    input:
        config=PLAN.step_config("report"),
        calibration=PLAN.calibration_input(),
        bench=[f"{layout.BENCH_DIR}/{name}" for name in (layout.PER_SCENARIO, layout.SUMMARY,
                                                         layout.WINNER, layout.TUNED, layout.CLAIRVOYANT)],
        demo=f"{layout.DEMO_DIR}/{layout.DEMO_TABLE}",
        gantt=f"{FIGURES}/{layout.DEMO_GANTT}",
        train_logs=[layout.train_log(s) for s in TRAIN_SEEDS],
        train_runs=[layout.train_run_log(s) for s in TRAIN_SEEDS],   # run records, shown apart
        robustness=robust_report_inputs,   # each setting's summary, verdict, table and tuned k
        chains=PLAN.ppo_alone_logs,   # the PPO-alone settings' logs: learning_by_chain.png
        replay=PLAN.replay_outputs(),
        studio=studio_report_inputs,
        workload=[layout.WORKLOAD] if HISTORY else [],
        plan_times=expand(rules.plan_candidacy.output.times, setting=PLAN_SETTINGS),   # run records, shown apart
        manifest=layout.MANIFEST,   # its digest, printed in the report
        farm=PLAN.farm_outputs(),   # the chunked farm settings (workflow/rules/farm.smk)
    output:
        markdown=report(layout.REPORT_PATH, caption="../report/rapport.rst", category="5. Report"),
        figures=[report(f"{FIGURES}/{name}", caption=f"../report/{caption}",
                        category="3. Benchmark" if name.startswith("benchmark") else "2. Training")
                 for name, caption in REPORT_FIGURES.items()],
    params:
        bench=wc.bench_dir,
        demo=wc.demo_dir,
        train=wc.train_dir,
        figures=wc.figures_dir,
        robustness=layout.ROBUST_DIR,   # a folder (settings may be none)
        farm=" ".join(shlex.quote(layout.farm_root(n)) for n in FARM),
    log:
        layout.log("report"),
    benchmark:
        layout.usage("report")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} report --bench {params.bench:q}"
        " --out {output.markdown:q} --figures {params.figures:q} --train-dir {params.train:q}"
        " --demo {params.demo:q} --robustness {params.robustness:q} --manifest {input.manifest:q}"
        " --farm {params.farm} > {log:q} 2>&1"
