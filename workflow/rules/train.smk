rule train:
    """One PPO policy per training seed (train.seeds)."""
    input:
        config=step_config("train"),
        calibration=calibration_input(),
    output:
        policy="results/train/seed-{seed}/politique.pt",
        log_csv="results/train/seed-{seed}/train_log.csv",
        curve=report("results/train/seed-{seed}/learning_curve.png",
                     caption="../report/learning_curve.rst", category="2. Training",
                     subcategory="seed {seed}"),
    log:
        "results/logs/train/seed-{seed}.log",
    benchmark:
        "results/logs/train/seed-{seed}.usage.tsv"
    threads: config["train"]["threads"]
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} train --seed {wildcards.seed}"
        " --out {output.policy:q} --threads {threads} --fresh > {log:q} 2>&1"
