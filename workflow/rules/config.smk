rule step_config:
    """Write the config file of one step: the settings it depends on, and only those.
    Runs no command: the text is Plan.step_config_text (sched/pipeline/plan.py)."""
    output:
        PLAN.step_config("{step}"),
    params:
        text=WC.step_config_text,
    log:
        layout.log("config/{step}"),
    wildcard_constraints:
        step="|".join(steps.STEP_SETTINGS),
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"
