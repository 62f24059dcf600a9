"""The workflow's plan, without Snakemake: what each job reads, runs and writes.

The Snakefile and workflow/rules/*.smk bind these to rules (workflow/rules/common.smk); tests
import them directly (tests/test_pipeline_plan.py). Modules:

* ``steps``: the settings each step reads (``STEP_SETTINGS``) and the text of its config file;
* ``plan``: the policies, seeds, robustness and farm settings of a run, and its jobs' files
  (``Plan``);
* ``candidacy``: plan's candidacy in the workflow, under the main setting and elsewhere;
* ``studio``: the studio setting, its one home (name, defaults, scenarios, files);
* ``wildcards``: the rules' input and params functions (no lambda in a rule).
"""
