rule tune:
    """ATC's look-ahead k, chosen on the validation scenarios."""
    input:
        config=step_config("tune"),
        calibration=calibration_input(),
    output:
        f"{BENCH}/tuned.json",
    log:
        "results/logs/tune.log",
    benchmark:
        "results/logs/tune.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} tune --out {output:q} --threads {threads}"
        " > {log:q} 2>&1"


rule benchmark:
    """Every policy on one shard (a range of test seeds) of the test scenarios."""
    input:
        config=step_config("benchmark"),
        calibration=calibration_input(),
        tuned=f"{BENCH}/tuned.json",
        policies=policy_files(),
    output:
        f"{BENCH}/shards/{{seeds}}/per_scenario.csv",
    params:
        policies=",".join(POLICIES),
        policy_files=policy_file_args(),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "results/logs/benchmark/{seeds}.log",
    benchmark:
        "results/logs/benchmark/{seeds}.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} benchmark --policies {params.policies}"
        " --seeds {wildcards.seeds} --tuned {input.tuned:q} {params.policy_files}"
        " --out {params.out:q} --threads {threads} > {log:q} 2>&1"


rule gather:
    """The shards joined: per-scenario table, summary with bootstrap intervals, winner."""
    input:
        config=step_config("gather"),
        shards=expand(f"{BENCH}/shards/{{seeds}}/per_scenario.csv", seeds=SHARDS),
        tuned=f"{BENCH}/tuned.json",
        policies=policy_files(),
    output:
        per_scenario=f"{BENCH}/per_scenario.csv",
        resume=report(f"{BENCH}/resume.csv", caption="../report/resume.rst",
                      category="3. Benchmark"),
        winner=f"{BENCH}/winner.json",
    params:
        policy_files=policy_file_args(),
        out=lambda wildcards, output: os.path.dirname(output.per_scenario),
    log:
        "results/logs/gather.log",
    benchmark:
        "results/logs/gather.usage.tsv"
    threads: 1
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} gather {input.shards:q} --tuned {input.tuned:q}"
        " {params.policy_files} --out {params.out:q} > {log:q} 2>&1"


rule clairvoyant:
    """The headroom reference: a local search that knows the future."""
    input:
        config=step_config("clairvoyant"),
        calibration=calibration_input(),
    output:
        f"{BENCH}/clairvoyant.csv",
    log:
        "results/logs/clairvoyant.log",
    benchmark:
        "results/logs/clairvoyant.usage.tsv"
    threads: 2
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} clairvoyant --out {output:q}"
        " --threads {threads} > {log:q} 2>&1"
