rule step_config:
    """The settings one step depends on (see common.smk), as that step's config file."""
    output:
        step_config("{step}"),
    params:
        text=lambda wildcards: step_config_text(wildcards.step),
    log:
        "results/logs/config/{step}.log",
    wildcard_constraints:
        step="|".join(STEP_SETTINGS),
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"
