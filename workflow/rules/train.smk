rule teach:
    """The rollout teacher's labels on one shard of the first train.teacher_scenarios training seeds."""
    input:
        config=step_config("teach"),
        calibration=calibration_input(),
    output:
        "results/teacher/labels-{seeds}.npz",
    log:
        "results/logs/teach/{seeds}.log",
    benchmark:
        "results/logs/teach/{seeds}.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} teach --seeds {wildcards.seeds} --out {output:q}"
        " --no-progress > {log:q} 2>&1"


rule train:
    """One PPO policy per training seed (train.seeds)."""
    input:
        config=step_config("train"),
        calibration=calibration_input(),
        teacher=TEACHER,
    output:
        policy="results/train/seed-{seed}/politique.pt",
        log_csv="results/train/seed-{seed}/train_log.csv",
        curve=report("results/train/seed-{seed}/learning_curve.png",
                     caption="../report/learning_curve.rst", category="2. Training",
                     subcategory="seed {seed}"),
    params:
        teacher=lambda wildcards, input: ("--teacher " + " ".join(input.teacher)) if input.teacher else "",
    log:
        "results/logs/train/seed-{seed}.log",
    benchmark:
        "results/logs/train/seed-{seed}.usage.tsv"
    threads: config["train"]["threads"]
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} train --seed {wildcards.seed}"
        " --out {output.policy:q} {params.teacher} --threads {threads} --fresh > {log:q} 2>&1"
