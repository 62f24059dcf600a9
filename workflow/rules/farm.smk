# The chunked farm settings (config farm.settings; issue 59, points 3 to 7): jobs of frames on a
# render farm, each benchmarked in one job by `sched farm-bench` under results/farm/<name>/. Rules
# only (no training): ATC's k tuned at frame level, the shipped rule chosen on validation seeds, the
# test seeds against the farm's dispatchers, the same jobs run whole, and the sync intervals.
# Apart from the robustness settings: nothing of theirs changes (docs/workflow.md).

# The settings, their step configs and files: Plan.farm_settings, farm_config_text, farm_inputs and
# farm_outputs (sched/pipeline/plan.py).


rule farm_config:
    """Write the config file of one chunked farm setting's benchmark.
    Runs no command: the text is Plan.farm_config_text (sched/pipeline/plan.py)."""
    output:
        layout.step_config("farm", layout.farm_root("{farm}")),
    params:
        text=WC.farm_config_text,
    log:
        layout.log("farm/{farm}/config"),
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM)) or "(?!)",
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"


rule farm_benchmark:
    """Benchmark one chunked farm setting: ATC's k at frame level on the validation seeds, the shipped
    rule chosen on its selection seeds, every rule, farm-fifo, farm-balanced, the jobs run whole and the
    shipped rule at sync 60 and 300 s on the test seeds, with paired intervals (farm.csv); the clairvoyant
    headroom on the first test seeds (clairvoyant.csv); in the longer run plan's candidacy (plan_candidacy.json).
    Runs `sched farm-bench` (sched/commands/farm_bench.py -> sched.evaluate.farm.bench.tune,
    sched.evaluate.farm.bench.choose, sched.evaluate.farm.bench.comparisons, sched.evaluate.farm.headroom.run,
    sched.evaluate.farm.plan_candidacy.judge)."""
    input:
        config=layout.step_config("farm", layout.farm_root("{farm}")),
        calibration=WC.farm_inputs,
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_FILES],
    params:
        out=wc.output_dir,
        # plan's candidacy on the chunked farm: the longer run only (about ten CPU seconds a farm-32 scenario)
        plan=PLAN.farm_plan_arg(),
    log:
        layout.log("farm/{farm}/benchmark"),
    benchmark:
        layout.usage("farm/{farm}/benchmark")
    wildcard_constraints:
        farm="|".join(map(re.escape, [n for n in FARM if n not in FARM_LEARNED])) or "(?!)",
    threads: cores(PLAN.farm_bench_threads())   # two in the longer run: plan's candidacy, scenarios side by side
    priority: 25   # after the main chain's ready jobs (30), which it must not hold back; in the gaps it leaves
    resources:
        job_threads=job_threads,   # its --threads: the threads, not the reservation
    shadow:
        "minimal"
    shell:
        "python -m sched --config {input.config:q} farm-bench --out {params.out:q} {params.plan}"
        " --threads {resources.job_threads} > {log:q} 2>&1"


# The learned farm policy of a setting with a `train` block, in the longer run only (profile full;
# Plan.farm_learned): PPO on the setting's training seeds from the ATC prior with its tuned k, then
# its candidacy and test rows beside the benchmark. The benchmark's verdict is then the rules' choice
# (farm_verdict_rules.json), and farm_learned writes farm_verdict.json, what rank() follows: the
# learned policy when its candidacy ships it, else the rules' verdict.

use rule farm_benchmark as farm_benchmark_learned with:
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_BENCH_LEARNED_FILES],
    params:
        out=wc.output_dir,
        plan=f"{PLAN.farm_plan_arg()} --verdict-file {layout.FARM_RULES_VERDICT}",
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM_LEARNED)) or "(?!)",


rule farm_train_config:
    """Write the config file of `sched farm-train` under one farm setting (its benchmark's settings and
    its `train` block). Runs no command: the text is Plan.farm_train_config_text (sched/pipeline/plan.py)."""
    output:
        layout.step_config("farm_train", layout.farm_root("{farm}")),
    params:
        text=WC.farm_train_config_text,
    log:
        layout.log("farm/{farm}/train_config"),
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM_LEARNED)) or "(?!)",
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"


rule farm_teach:
    """The gated teacher's warm start of one setting with `train: {teacher: true}` (Plan.farm_taught):
    plan's chunked teacher on tuned ATC labels its first train.teacher_scenarios training seeds, the
    scorer from the ATC prior distilled onto them, on farm-train's config file. Runs `sched farm-teach`
    (sched/commands/farm_teach.py -> sched.learn.farm.teach.warm_start)."""
    input:
        config=layout.step_config("farm_train", layout.farm_root("{farm}")),
        tuned=f"{layout.farm_root('{farm}')}/{layout.TUNED}",
        calibration=WC.farm_inputs,
    output:
        [f"{layout.farm_root('{farm}')}/{layout.FARM_TEACH}/{f}" for f in (layout.FARM_POLICY,
                                                                           layout.FARM_TEACHER_LABELS)],
    params:
        out=wc.output_dir,
    log:
        layout.log("farm/{farm}/teach"),
    benchmark:
        layout.usage("farm/{farm}/teach")
    wildcard_constraints:
        farm="|".join(map(re.escape, PLAN.farm_taught())) or "(?!)",
    threads: cores(1)
    priority: 25
    resources:
        job_threads=job_threads,
    shell:
        "python -m sched --config {input.config:q} farm-teach --tuned {input.tuned:q} --out {params.out:q}"
        " --threads {resources.job_threads} > {log:q} 2>&1"


rule farm_train:
    """Train the farm scorer of one setting by PPO from the ATC prior with the setting's tuned k, the best
    weights on its validation seeds. Runs `sched farm-train` (sched/commands/farm_train.py ->
    sched.learn.farm.train.train)."""
    input:
        config=layout.step_config("farm_train", layout.farm_root("{farm}")),
        tuned=f"{layout.farm_root('{farm}')}/{layout.TUNED}",
        calibration=WC.farm_inputs,
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_TRAIN_FILES],
    params:
        out=wc.output_dir,
    log:
        layout.log("farm/{farm}/train"),
    benchmark:
        layout.usage("farm/{farm}/train")
    wildcard_constraints:
        farm="|".join(map(re.escape, PLAN.farm_untaught())) or "(?!)",
    threads: cores(1)
    priority: 25
    resources:
        job_threads=job_threads,
    shell:
        "python -m sched --config {input.config:q} farm-train --tuned {input.tuned:q} --out {params.out:q}"
        " --threads {resources.job_threads} > {log:q} 2>&1"


rule farm_train_taught:
    """farm_train under a setting with `train: {teacher: true}`, with `--init`: PPO from farm_teach's warm
    start (kept if better on validation than the ATC prior; farm_train's command text stays the other
    settings'). Runs `sched farm-train` (sched/commands/farm_train.py -> sched.learn.farm.train.train)."""
    input:
        config=layout.step_config("farm_train", layout.farm_root("{farm}")),
        tuned=f"{layout.farm_root('{farm}')}/{layout.TUNED}",
        calibration=WC.farm_inputs,
        init=WC.farm_init,
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_TRAIN_FILES],
    params:
        out=wc.output_dir,
        init=wc.init_arg,
    log:
        layout.log("farm/{farm}/train"),
    benchmark:
        layout.usage("farm/{farm}/train")
    wildcard_constraints:
        farm="|".join(map(re.escape, PLAN.farm_taught())) or "(?!)",
    threads: cores(1)
    priority: 25
    resources:
        job_threads=job_threads,
    shell:
        "python -m sched --config {input.config:q} farm-train --tuned {input.tuned:q} --out {params.out:q}"
        " {params.init} --threads {resources.job_threads} > {log:q} 2>&1"


rule farm_learned:
    """Judge one setting's learned farm policy beside its benchmark: its candidacy on the selection
    (validation) seeds, its rows at the setting's sync and at 60 and 300 s on the test seeds, and the
    setting's farm_verdict.json (the learned policy's when it ships, sched.ranking.farm.learned). Runs
    `sched farm-learned` (sched/commands/farm_learned.py -> sched.evaluate.farm.learned.judge)."""
    input:
        config=layout.step_config("farm", layout.farm_root("{farm}")),
        policy=f"{layout.farm_root('{farm}')}/{layout.FARM_POLICY}",
        bench=[f"{layout.farm_root('{farm}')}/{f}" for f in FARM_BENCH_LEARNED_FILES],
        calibration=WC.farm_inputs,
    output:
        [f"{layout.farm_root('{farm}')}/{f}" for f in FARM_SHIP_FILES],
    params:
        out=wc.output_dir,
        rules=layout.FARM_RULES_VERDICT,
        verdict=layout.FARM_VERDICT,
    log:
        layout.log("farm/{farm}/learned"),
    benchmark:
        layout.usage("farm/{farm}/learned")
    wildcard_constraints:
        farm="|".join(map(re.escape, FARM_LEARNED)) or "(?!)",
    threads: cores(1)
    priority: 25
    resources:
        job_threads=job_threads,
    shell:
        "python -m sched --config {input.config:q} farm-learned --bench {params.out:q} --policy {input.policy:q}"
        " --rules-verdict {params.out:q}/{params.rules:q} --verdict {params.out:q}/{params.verdict:q}"
        " --out {params.out:q} --threads {resources.job_threads} > {log:q} 2>&1"
