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


rule calibrate_frames:
    """Fit frames per job and time per frame by kind to the bench logs' frames column (issue 59,
    point 6): a file of its own, so that results/calibration.json keeps its bytes; config
    scenario.chunks.frames: {fit: results/calibration_frames.json} draws a chunked setting's frames from it.
    Runs `sched calibrate-frames` (sched/commands/calibrate_frames.py -> sched.data.frames_fit.fit_bench)."""
    input:
        config=PLAN.step_config("calibrate"),
        bench=config["calibration"]["bench"],
    output:
        json=layout.FRAMES_FIT,
    log:
        layout.log("calibrate-frames"),
    benchmark:
        layout.usage("calibrate-frames")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} calibrate-frames {input.bench:q}"
        " --out {output.json:q} > {log:q} 2>&1"
