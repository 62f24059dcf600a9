# The policies: the gated teacher's labels and their student (the warm start), the rounds of
# expert iteration (train.rounds), then one PPO training job per training seed from the last
# round. The robustness settings that retrain reuse teach and train
# (workflow/rules/robustness.smk; their warm start runs inside `sched train --teacher`).


rule teach:
    """Label one shard of the first train.teacher_scenarios training seeds with the gated teacher
    on its base rule (train.teacher_base).
    Runs `sched teach` (sched/commands/teach.py -> sched.learn.search.teacher.make_labels)."""
    input:
        config=PLAN.step_config("teach"),
        calibration=PLAN.calibration_input(),
    output:
        layout.teacher_labels("{seeds}"),
    params:
        atc_k="",   # ATC's k for the teacher's rollouts: the config's (robust_teach: the setting's)
    log:
        layout.log("teach/{seeds}"),
    benchmark:
        layout.usage("teach/{seeds}")
    priority: 30   # the main chain first: the longest path of the workflow (docs/workflow.md)
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} teach --seeds {wildcards.seeds} {params.atc_k}"
        " --out {output:q} --no-progress > {log:q} 2>&1"


rule warm_start:
    """Distil the gated teacher's labels into training seed S's warm start (round 0), from the prior.
    Runs `sched distill` (sched/commands/distill.py -> sched.learn.search.iterate.distill_stage)."""
    input:
        config=PLAN.step_config("distill"),
        calibration=PLAN.calibration_input(),
        labels=PLAN.teacher_files(),
    output:
        layout.warm_policy_file("{seed}"),
    log:
        layout.log("train/warm-{seed}"),
    benchmark:
        layout.usage("train/warm-{seed}")
    priority: 30   # the main chain first: the longest path of the workflow (docs/workflow.md)
    params:
        threads=config["train"]["threads"],   # torch's threads decide bits: the config's, never -j's
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} distill --labels {input.labels:q} --seed {wildcards.seed}"
        " --stage warm --out {output:q} --threads {params.threads} --no-progress > {log:q} 2>&1"


rule teach_round:
    """Label round R of training seed S: the states its policy of round R - 1 visits (and a share of
    the teacher's own), by the gated teacher on that policy (base and rollout continuation).
    Runs `sched teach` (sched/commands/teach.py -> sched.learn.search.iterate.round_labels)."""
    input:
        config=PLAN.step_config("teach"),
        calibration=PLAN.calibration_input(),
        policy=WC.round_start,
    output:
        layout.round_labels("{seed}", "{round}"),
    log:
        layout.log("teach/seed-{seed}-round-{round}"),
    benchmark:
        layout.usage("teach/seed-{seed}-round-{round}")
    priority: 30   # the main chain first: the longest path of the workflow (docs/workflow.md)
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "NUMBA_NUM_THREADS=1 python -m sched --config {input.config:q} teach --round {wildcards.round}"
        " --policy {input.policy:q} --out {output:q} --no-progress > {log:q} 2>&1"


rule distill_round:
    """Distil the labels of rounds 1..R into training seed S's policy of round R, from its policy of
    round R - 1, kept only when better on the validation scenarios.
    Runs `sched distill` (sched/commands/distill.py -> sched.learn.search.iterate.distill_stage)."""
    input:
        config=PLAN.step_config("distill"),
        calibration=PLAN.calibration_input(),
        labels=WC.round_labels,
        start=WC.round_start,
    output:
        layout.round_policy_file("{seed}", "{round}"),
    log:
        layout.log("train/seed-{seed}-round-{round}"),
    benchmark:
        layout.usage("train/seed-{seed}-round-{round}")
    priority: 30   # the main chain first: the longest path of the workflow (docs/workflow.md)
    params:
        threads=config["train"]["threads"],   # torch's threads decide bits: the config's, never -j's
    threads: cores(1)
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} distill --labels {input.labels:q} --start {input.start:q}"
        " --seed {wildcards.seed} --stage round-{wildcards.round} --out {output:q} --threads {params.threads}"
        " --no-progress > {log:q} 2>&1"


rule train:
    """Train one PPO policy per training seed (train.seeds), from its last round of expert iteration
    (or its warm start) when train.teacher_scenarios > 0, else from the prior.
    Runs `sched train` (sched/commands/train.py -> sched.learn.ppo.loop.train)."""
    input:
        config=PLAN.step_config("train"),
        calibration=PLAN.calibration_input(),
        init=WC.train_init,
    output:
        policy=layout.policy_file("{seed}"),
        log_csv=layout.train_log("{seed}"),
        run_csv=layout.train_run_log("{seed}"),   # its run record: wall times, throughput
        curve=report(layout.learning_curve("{seed}"), caption="../report/learning_curve.rst",
                     category="2. Training", subcategory="seed {seed}"),
    params:
        teacher="",   # robust_train_warm: the setting's label files (the warm start inside the job)
        init=wc.init_arg,
        atc_k="",   # ATC's k of the prior and the rollouts: the config's (robust_train: the setting's)
        progress="",   # the log shows the progress bars (robust_train: --no-progress)
        threads=config["train"]["threads"],
    log:
        layout.log("train/seed-{seed}"),
    benchmark:
        layout.usage("train/seed-{seed}")
    priority: 20   # the main chain first: the longest path of the workflow (docs/workflow.md)
    threads: cores()   # reserved (common.smk); the job runs on train.threads: a second
    # thread barely speeds PPO's small matrix products
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} train --seed {wildcards.seed} {params.atc_k}"
        " --out {output.policy:q} {params.teacher} {params.init} --threads {params.threads} --fresh"
        " {params.progress} > {log:q} 2>&1"
