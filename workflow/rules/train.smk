# The policies: the rollout teacher's labels (the warm start), then one PPO
# training job per training seed. The robustness settings that retrain reuse
# these rules (workflow/rules/robustness.smk).


rule teach:
    """Label one shard of the first train.teacher_scenarios training seeds with the rollout teacher.
    Runs `sched teach` (sched/commands/teach.py -> sched.learn.teacher.make_labels)."""
    input:
        config=step_config("teach"),
        calibration=calibration_input(),
    output:
        layout.teacher_labels("{seeds}"),
    params:
        atc_k="",   # ATC's k for the teacher's rollouts: the config's (robust_teach: the setting's)
    log:
        layout.log("teach/{seeds}"),
    benchmark:
        layout.usage("teach/{seeds}")
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} teach --seeds {wildcards.seeds} {params.atc_k}"
        " --out {output:q} --no-progress > {log:q} 2>&1"


rule train:
    """Train one PPO policy per training seed (train.seeds), warm-started from the teacher's labels
    (the warm start is an output too, warm_start.pt) when train.teacher_scenarios > 0.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.train)."""
    input:
        config=step_config("train"),
        calibration=calibration_input(),
        teacher=teacher_files(),
    output:
        policy=layout.policy_file("{seed}"),
        log_csv=layout.train_log("{seed}"),
        curve=report(layout.learning_curve("{seed}"), caption="../report/learning_curve.rst",
                     category="2. Training", subcategory="seed {seed}"),
        **warm_start_output(),   # warm_start.pt (benchmarked as ppo-<S>-warm) when there is a teacher
    params:
        teacher=lambda wildcards, input: ("--teacher " + " ".join(input.teacher)) if input.teacher else "",
        atc_k="",   # ATC's k of the prior and the rollouts: the config's (robust_train: the setting's)
        progress="",   # the log shows the progress bars (robust_train: --no-progress)
        threads=config["train"]["threads"],
    log:
        layout.log("train/seed-{seed}"),
    benchmark:
        layout.usage("train/seed-{seed}")
    threads: cores()   # reserved (common.smk); the job runs on train.threads: a second
    # thread barely speeds PPO's small matrix products
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} train --seed {wildcards.seed} {params.atc_k}"
        " --out {output.policy:q} {params.teacher} --threads {params.threads} --fresh {params.progress}"
        " > {log:q} 2>&1"
