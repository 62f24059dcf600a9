"""Evaluation: seeds, runs of named policies, paired statistics, ATC tuning, the
benchmark tables, the demonstration, the clairvoyant headroom run, the report and its figures."""
