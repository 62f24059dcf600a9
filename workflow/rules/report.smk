FIGURES = "results/figures"
REPORT_FIGURES = {
    "benchmark_mean_ci.png": "benchmark_mean_ci.rst",
    "benchmark_paired_vs_atc.png": "benchmark_paired_vs_atc.rst",
    "benchmark_ecdf.png": "benchmark_ecdf.rst",
    "learning_curves.png": "learning_curves.rst",
}


rule demo:
    """The demonstration scenario under every policy, and its Gantt chart."""
    input:
        config=step_config("demo"),
        calibration=calibration_input(),
        tuned=f"{BENCH}/tuned.json",
        policies=policy_files(),
    output:
        table="results/demo/demo.csv",
        schedules=expand("results/demo/schedule-{policy}.csv", policy=POLICIES),
        gantt=report(f"{FIGURES}/demo_gantt.png", caption="../report/demo_gantt.rst",
                     category="4. Demonstration"),
    params:
        policies=",".join(POLICIES),
        policy_files=policy_file_args(),
        out=lambda wildcards, output: os.path.dirname(output.table),
        figures=lambda wildcards, output: os.path.dirname(output.gantt),
    log:
        "results/logs/demo.log",
    benchmark:
        "results/logs/demo.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} demo --policies {params.policies}"
        " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q}"
        " --figures {params.figures:q} --threads {threads} > {log:q} 2>&1"


rule report:
    """rapport.md and the benchmark figures, from the files above."""
    input:
        config=step_config("report"),
        calibration=calibration_input(),
        bench=multiext(f"{BENCH}/", "per_scenario.csv", "resume.csv", "winner.json",
                       "tuned.json", "clairvoyant.csv"),
        demo="results/demo/demo.csv",
        gantt=f"{FIGURES}/demo_gantt.png",
        train_logs=expand("results/train/seed-{seed}/train_log.csv", seed=TRAIN_SEEDS),
        robustness=expand(f"{ROBUST_DIR}/{{variant}}/resume.csv", variant=list(ROBUST)),
    output:
        rapport=report("results/rapport.md", caption="../report/rapport.rst",
                       category="5. Report"),
        figures=[report(f"{FIGURES}/{name}", caption=f"../report/{caption}",
                        category="3. Benchmark" if name.startswith("benchmark") else "2. Training")
                 for name, caption in REPORT_FIGURES.items()],
    params:
        bench=lambda wildcards, input: os.path.dirname(input.bench[0]),
        demo=lambda wildcards, input: os.path.dirname(input.demo),
        train=lambda wildcards, input: os.path.dirname(os.path.dirname(input.train_logs[0])),
        figures=lambda wildcards, output: os.path.dirname(output.figures[0]),
        robustness=lambda wildcards: ROBUST_DIR,   # a folder (settings may be none)
    log:
        "results/logs/report.log",
    benchmark:
        "results/logs/report.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} report --bench {params.bench:q}"
        " --out {output.rapport:q} --figures {params.figures:q} --train-dir {params.train:q}"
        " --demo {params.demo:q} --robustness {params.robustness:q} > {log:q} 2>&1"
