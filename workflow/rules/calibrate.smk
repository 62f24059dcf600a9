rule calibrate:
    """Fit the per-kind duration distributions and the duration model to the bench logs.
    Runs `sched calibrate` (sched/commands/calibrate.py -> sched.data.bench.fit.calibrate)."""
    input:
        config=PLAN.step_config("calibrate"),
        bench=config["calibration"]["bench"],
    output:
        json=layout.CALIBRATION,
        png=report(layout.CALIBRATION_FIGURE, caption="../report/calibration.rst",
                   category="1. Calibration"),
    log:
        layout.log("calibrate"),
    benchmark:
        layout.usage("calibrate")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} calibrate {input.bench:q}"
        " --out {output.json:q} --figure {output.png:q} > {log:q} 2>&1"
