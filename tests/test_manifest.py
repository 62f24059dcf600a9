"""results/manifest.sha256 (sched/evidence/manifest.py, `sched manifest`): every result artefact in DAG
order, run records and the report's own outputs left out; two manifests compared name the first
artefact that differs."""

import hashlib

import pytest

from sched.evidence import manifest

from .conftest import run_here

FILES = {
    "benchmark/winner.json": "{}",
    "benchmark/shards/2000000-2000149/per_scenario.csv": "a",
    "train/seed-1/politique.pt": "w",
    "train/seed-1/warm_start.pt": "w0",
    "train/seed-1/train_log.csv": "loss",
    "calibration.json": "c",
    "config/train.yaml": "t",
    "robustness/load-0.70/winner.json": "{}",
    "robustness/load-0.70/tuned.json": "{}",
    # run records and the report: never listed
    "train/seed-1/train_log.run.csv": "12 s",
    "logs/train/seed-1.log": "log",
    "logs/train/seed-1.usage.tsv": "s",
    "logs/run.json": "{}",
    "rapport.md": "# report",
    "figures/benchmark_ecdf.png": "png",
    "benchmark/.winner.json.123-abc.tmp": "partial",
    # the report's config: read by the report alone, rewritten after the manifest when a report
    # setting changes (the manifest would otherwise go stale)
    "config/report.yaml": "title",
}


def tree(root, files=FILES):
    for rel, text in files.items():
        p = root / "results" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "results"


def test_lists_every_result_in_dag_order_with_sha256sum_lines(tmp_path):
    text = manifest.manifest_text(tree(tmp_path))
    lines = text.splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == [
        "results/config/train.yaml",
        "results/calibration.json",
        "results/train/seed-1/warm_start.pt",
        "results/train/seed-1/politique.pt",
        "results/train/seed-1/train_log.csv",
        "results/benchmark/shards/2000000-2000149/per_scenario.csv",
        "results/benchmark/winner.json",
        "results/robustness/load-0.70/tuned.json",
        "results/robustness/load-0.70/winner.json",
    ]
    assert lines[1] == f"{hashlib.sha256(b'c').hexdigest()}  results/calibration.json"


def test_a_run_record_changes_nothing_a_result_changes_its_line(tmp_path):
    results = tree(tmp_path)
    before = manifest.manifest_text(results)
    (results / "train/seed-1/train_log.run.csv").write_text("13 s")
    (results / "logs/run.json").write_text('{"host": "other"}')
    assert manifest.manifest_text(results) == before
    (results / "train/seed-1/train_log.csv").write_text("other loss")
    assert manifest.manifest_text(results) != before


def test_compare_names_the_first_difference_in_dag_order(tmp_path):
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    (tmp_path / "a.sha256").write_text(manifest.manifest_text(a))
    assert manifest.compare(tmp_path / "a.sha256", tmp_path / "a.sha256") == []
    (b / "benchmark/winner.json").write_text('{"policy": "ppo-2"}')
    (b / "train/seed-1/warm_start.pt").write_text("w0 on another processor")
    (b / "robustness/load-0.70/tuned.json").unlink()
    (tmp_path / "b.sha256").write_text(manifest.manifest_text(b))
    diffs = manifest.compare(tmp_path / "a.sha256", tmp_path / "b.sha256")
    assert [(d.path, d.how) for d in diffs] == [
        ("results/train/seed-1/warm_start.pt", "differs"),
        ("results/benchmark/winner.json", "differs"),
        ("results/robustness/load-0.70/tuned.json", "only in A"),
    ]
    r = run_here("manifest", "compare", tmp_path / "a.sha256", tmp_path / "b.sha256")
    assert r.returncode == 1
    assert (
        r.stdout.splitlines()[0]
        == "first difference (DAG order): results/train/seed-1/warm_start.pt (differs)"
    )
    assert r.stdout.splitlines()[-1] == "3 of 9 artefacts differ"
    same = run_here("manifest", "compare", tmp_path / "a.sha256", tmp_path / "a.sha256")
    assert same.returncode == 0 and same.stdout.startswith("identical: 9 result artefacts, sha256 ")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "not a manifest\n",
            r"line 1: expected '<sha256>  <path>' \(sha256sum's format\), got 'not a manifest'",
        ),
        (f"{'0' * 64}  results/a\n{'1' * 64}  results/a\n", r"line 2: 'results/a' listed twice"),
    ],
)
def test_a_malformed_manifest_is_refused_naming_the_line(tmp_path, text, message):
    p = tmp_path / "m.sha256"
    p.write_text(text)
    with pytest.raises(manifest.ManifestError, match=message):
        manifest.read(p)
    r = run_here("manifest", "compare", p, p)
    assert r.returncode == 2 and r.stderr.startswith("sched manifest: error: ")


def test_write_makes_the_manifest_and_the_run_record(tmp_path):
    import json

    results = tree(tmp_path)
    out, record = tmp_path / "m.sha256", tmp_path / "run.json"
    r = run_here("manifest", "write", "--results", results, "--out", out, "--record", record)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == manifest.manifest_text(results)
    rec = json.loads(record.read_text())
    assert rec["manifest"] == hashlib.sha256(out.read_bytes()).hexdigest() and rec["artefacts"] == 9
    assert rec["versions"]["numpy"] and rec["processor"]["machine"] and "pins" in rec["determinism"]
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_here("manifest", "write", "--results", empty, "--out", tmp_path / "x", "--record", tmp_path / "y")
    assert r.returncode == 2 and "no result artefact" in r.stderr and not (tmp_path / "x").exists()
