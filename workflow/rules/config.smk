rule step_config:
    """Write the config file of one step: the settings it depends on, and only those.
    Runs no command: the text is step_config_text (workflow/rules/common.smk)."""
    output:
        step_config("{step}"),
    params:
        text=lambda wildcards: step_config_text(wildcards.step),
    log:
        layout.log("config/{step}"),
    wildcard_constraints:
        step="|".join(STEP_SETTINGS),
    localrule: True
    shell:
        "printf '%s' {params.text:q} > {output:q} 2> {log:q}"
