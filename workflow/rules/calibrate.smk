rule calibrate:
    """Per-kind duration distributions and the duration model, from the bench logs."""
    input:
        config=step_config("calibrate"),
        bench=config["calibration"]["bench"],
    output:
        json="results/calibration.json",
        png=report("results/calibration.png", caption="../report/calibration.rst",
                   category="1. Calibration"),
    log:
        "results/logs/calibrate.log",
    benchmark:
        "results/logs/calibrate.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} calibrate {input.bench:q}"
        " --out {output.json:q} --figure {output.png:q} > {log:q} 2>&1"
