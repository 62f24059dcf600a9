# The benchmark under other settings (config robustness.settings): per setting,
# ATC's k tuned for it, optionally the policies retrained for it, and the whole
# test set benchmarked in one job (results/robustness/<name>/).


rule robust_config:
    """A step's config file under one robustness setting."""
    output:
        f"{ROBUST_DIR}/{{variant}}/config/{{step}}.yaml",
    params:
        text=lambda wildcards: variant_config_text(wildcards.variant, wildcards.step),
    log:
        f"results/logs/robustness/{{variant}}/config-{{step}}.log",
    wildcard_constraints:
        variant="|".join(ROBUST) or "^$",
        step="tune|teach|train|gather",
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"


rule robust_tune:
    """ATC's k tuned on the validation scenarios of one setting."""
    input:
        config=lambda wildcards: variant_config(wildcards.variant, "tune"),
        calibration=calibration_input(),
    output:
        f"{ROBUST_DIR}/{{variant}}/tuned.json",
    log:
        "results/logs/robustness/{variant}/tune.log",
    benchmark:
        "results/logs/robustness/{variant}/tune.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} tune --out {output:q} --threads {threads}"
        " > {log:q} 2>&1"


rule robust_teach:
    """The teacher's labels for a setting that retrains (one shard)."""
    input:
        config=lambda wildcards: variant_config(wildcards.variant, "teach"),
        calibration=calibration_input(),
        tuned=f"{ROBUST_DIR}/{{variant}}/tuned.json",
    output:
        f"{ROBUST_DIR}/{{variant}}/teacher/labels-{{seeds}}.npz",
    params:
        atc_k=lambda wildcards, input: variant_atc_k_arg(wildcards.variant, input.tuned),
    log:
        "results/logs/robustness/{variant}/teach-{seeds}.log",
    benchmark:
        "results/logs/robustness/{variant}/teach-{seeds}.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} teach --seeds {wildcards.seeds} {params.atc_k}"
        " --out {output:q} --no-progress > {log:q} 2>&1"


rule robust_train:
    """A policy retrained for one setting, per training seed."""
    input:
        config=lambda wildcards: variant_config(wildcards.variant, "train"),
        calibration=calibration_input(),
        tuned=f"{ROBUST_DIR}/{{variant}}/tuned.json",
        teacher=lambda wildcards: [f"{ROBUST_DIR}/{wildcards.variant}/teacher/labels-{r}.npz"
                                   for r in variant_teacher_shards(wildcards.variant)],
    output:
        policy=f"{ROBUST_DIR}/{{variant}}/train/seed-{{seed}}/politique.pt",
        log_csv=f"{ROBUST_DIR}/{{variant}}/train/seed-{{seed}}/train_log.csv",
        curve=f"{ROBUST_DIR}/{{variant}}/train/seed-{{seed}}/learning_curve.png",
    params:
        atc_k=lambda wildcards, input: variant_atc_k_arg(wildcards.variant, input.tuned),
        teacher=lambda wildcards, input: ("--teacher " + " ".join(input.teacher)) if input.teacher else "",
    log:
        "results/logs/robustness/{variant}/train-seed-{seed}.log",
    benchmark:
        "results/logs/robustness/{variant}/train-seed-{seed}.usage.tsv"
    threads: config["train"]["threads"]
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} train --seed {wildcards.seed} {params.atc_k}"
        " --out {output.policy:q} {params.teacher} --threads {threads} --fresh --no-progress"
        " > {log:q} 2>&1"


rule robust_benchmark:
    """Every policy on the whole test set under one setting: per-scenario table, summary, winner."""
    input:
        config=lambda wildcards: variant_config(wildcards.variant, "gather"),
        calibration=calibration_input(),
        tuned=f"{ROBUST_DIR}/{{variant}}/tuned.json",
        policies=lambda wildcards: variant_policy_files(wildcards.variant),
    output:
        per_scenario=f"{ROBUST_DIR}/{{variant}}/per_scenario.csv",
        resume=f"{ROBUST_DIR}/{{variant}}/resume.csv",
        winner=f"{ROBUST_DIR}/{{variant}}/winner.json",
    params:
        policies=",".join(POLICIES),
        policy_files=lambda wildcards: variant_policy_file_args(wildcards.variant),
        out=lambda wildcards, output: os.path.dirname(output.per_scenario),
    log:
        "results/logs/robustness/{variant}/benchmark.log",
    benchmark:
        "results/logs/robustness/{variant}/benchmark.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} benchmark --policies {params.policies}"
        " --tuned {input.tuned:q} {params.policy_files} --out {params.out:q} --threads {threads}"
        " > {log:q} 2>&1"
