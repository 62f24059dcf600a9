"""sched opencue sync under careless and hostile input (issue 32), against the fake Cuebot: one
job's value skips only that job, named; a bad mapping CSV is one line naming its file and line;
a job's name cannot forge a line of output; what OpenCue or rank() cannot take (priorities
beyond 32 bits, more jobs than rank()'s limit, a timeout that is no time) is refused at once,
with the limit, and nothing is set."""

import fnmatch
import random
import re

import pytest

pytest.importorskip("opencue", reason="optional extra opencue not installed (pip install -e '.[opencue]')")
pytest.importorskip("opencue_proto", reason="optional extra opencue not installed")
pytest.importorskip("grpc", reason="optional extra opencue not installed")

from sched import cli, limits  # noqa: E402
from sched.farms import mapping, opencue  # noqa: E402

from .fake_cuebot import FakeCuebot  # noqa: E402

NOW = 1_800_000_000.0  # 2027-01-15, POSIX seconds
VERDICTS = '"rank": {"winner": "winner.json", "tuned": "tuned.json", "settings": "robustness"}'


@pytest.fixture
def conf(tmp_path):
    """A config without verdicts: policy auto runs ATC with config rules.atc_k."""
    path = tmp_path / "config.yaml"
    path.write_text("{" + VERDICTS + "}")
    return str(path)


@pytest.fixture
def calibrated_conf(tmp_path, monkeypatch):
    """A config naming a calibration whose duration model knows the kind render only (the
    model stands in for sched.data.bench.calibration's: 2 s a frame)."""
    import sched.data.bench.calibration as cal

    def predict_duration(calibration, kind, features):
        if kind != "render":
            raise ValueError(f"kind {kind!r} is not in the calibration (kinds: render)")
        return 2.0 * features["frames"]

    monkeypatch.setattr(cal, "predict_duration", predict_duration)
    path = tmp_path / "config.yaml"
    path.write_text("{" + VERDICTS + ', "scenario": {"calibration": "cal.json"}}')
    return str(path)


def sync(conf, cue, *more, capsys):
    argv = ["--config", conf, "opencue", "sync", "--show", "film", "--cuebot", cue.address, "--now", str(NOW)]
    code = cli.main(argv + list(more))
    return code, capsys.readouterr()


def good_jobs(cue, n=3):
    return [cue.add_job(f"good-{i}", waiting=5 + i, avg_frame_s=10, start_time=int(NOW)) for i in range(n)]


# --------------------------------------------------------------------------- item 8: one job's value


@pytest.mark.parametrize(
    "comment, stats, why",
    [
        (
            "priority: superurgent",
            {},
            "field priority: unknown priority class 'superurgent'; expected one of low, normal, high, urgent",
        ),
        (
            "weight: 1e7",
            {},
            "comment 'sched': weight: expected a finite number > 0 and at most 1e+06 "
            "(sched.limits.MAX_WEIGHT), got '1e7'",
        ),
        (
            "frame_s: 1e300",
            {"avg_frame_s": 0},
            "comment 'sched': frame_s: expected a finite number > 0 and at most 1e+12",
        ),
        ("due_after_h: 1e300", {}, "comment 'sched': due_after_h: expected a finite number >= 0"),
        (
            "kind: nosuch",
            {"avg_frame_s": 0},
            "field estimate_s: missing (give estimate_s or duration_s; no calibration",
        ),
        (None, {"waiting": 2_000_000_000, "avg_frame_s": 1000}, "field estimate_s: must be at most 1e+12 s"),
    ],
)
def test_one_jobs_bad_value_skips_only_that_job_naming_it(conf, capsys, comment, stats, why):
    with FakeCuebot() as cue:
        good = good_jobs(cue)
        bad = cue.add_job("bad-job", start_time=int(NOW), **{"waiting": 10, "avg_frame_s": 60, **stats})
        if comment:
            cue.add_comment(bad, "sched", comment)
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        assert f"skipped bad-job: job bad-job: {why}" in out.out
        assert "job-0" not in out.out  # the job is named by its name, not by its task's id
        assert "3 pending jobs ranked by atc, 2 priorities changed, 1 kept, 1 skipped" in out.out
        assert {j for j, _ in cue.set_calls} == set(good[:2])  # the last keeps 1; bad-job untouched


def test_a_kind_the_duration_model_does_not_know_skips_its_job(calibrated_conf, capsys):
    with FakeCuebot() as cue:
        known = cue.add_job("known", waiting=10, avg_frame_s=0, start_time=int(NOW))
        cue.add_comment(known, "sched", "kind: render")
        unknown = cue.add_job("unknown", waiting=10, avg_frame_s=0, start_time=int(NOW))
        cue.add_comment(unknown, "sched", "kind: nosuch")
        good_jobs(cue, 1)
        code, out = sync(calibrated_conf, cue, capsys=capsys)
        assert code == 0, out.err
        assert "skipped unknown: job unknown: field estimate_s: missing, and the duration model " in out.out
        assert "kind 'nosuch' is not in the calibration" in out.out and "2 pending jobs ranked" in out.out
        assert known in {j for j, _ in cue.set_calls} and unknown not in {j for j, _ in cue.set_calls}


def test_jobs_whose_work_together_passes_max_seconds_skip_the_largest(conf, capsys):
    # each fits alone (now + 6e11 s <= 1e12 s), not both: rank() would refuse the whole call
    with FakeCuebot() as cue:
        cue.add_job("huge-a", waiting=600_000_000, avg_frame_s=1000, start_time=int(NOW))
        cue.add_job("huge-b", waiting=500_000_000, avg_frame_s=1000, start_time=int(NOW))
        good_jobs(cue, 2)
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        assert "skipped huge-a: job huge-a: estimate 6e+11 s: with the show's other jobs the plan " in out.out
        assert "3 pending jobs ranked" in out.out and "1 skipped" in out.out


@pytest.mark.parametrize(
    "row, message",
    [
        (
            "x,1e7,,",
            "line 3: weight: expected a finite number > 0 and at most 1e+06 (sched.limits.MAX_WEIGHT)",
        ),
        (
            "x,,1e300,",
            "line 3: frame_s: expected a finite number > 0 and at most 1e+12 (sched.limits.MAX_SECONDS)",
        ),
        ("x,,,1e300", "line 3: due_after_h: expected a finite number >= 0 and at most 2.77778e+08"),
    ],
)
def test_a_number_beyond_ranks_limits_in_the_mapping_is_refused_at_its_line(tmp_path, row, message):
    f = tmp_path / "map.csv"
    f.write_text(f"job,weight,frame_s,due_after_h\nshot-*,2,10,4\n{row}\n")
    with pytest.raises(mapping.MappingError, match=re.escape(message)):
        mapping.read_mapping(f)


@pytest.mark.parametrize(
    "column, value, message",
    [
        (
            "priority",
            "superurgent",
            "column priority: unknown priority class 'superurgent'; expected one of low, normal, high",
        ),
        ("kind", "nosuch", "column kind: field estimate_s: missing, and the duration model cannot estimate"),
    ],
)
def test_a_priority_class_or_kind_rank_refuses_refuses_the_mapping_at_its_line(
    calibrated_conf, tmp_path, capsys, column, value, message
):
    f = tmp_path / "map.csv"
    f.write_text(f"job,{column}\nshot-a,{'high' if column == 'priority' else 'render'}\nshot-*,{value}\n")
    with FakeCuebot() as cue:
        cue.add_job("shot-a", waiting=10, avg_frame_s=60, start_time=int(NOW))
        good_jobs(cue)
        code, out = sync(calibrated_conf, cue, "--mapping", str(f), capsys=capsys)
        assert code == 2 and out.out == "" and cue.set_calls == []
        lines = out.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"sched opencue: error: {f}: line 3: {message}")


# --------------------------------------------------------------------------- item 9: CSV, --priority-range


def test_a_mapping_csv_with_cr_line_ends_is_read_as_any_other(tmp_path):
    f = tmp_path / "map.csv"
    f.write_bytes(b"job,weight,due_after_h\rshot-a,3,2\r\rshot-*,2,\r")
    rules = mapping.read_mapping(f)
    assert [(r.pattern, r.values) for r in rules] == [
        ("shot-a", {"weight": 3.0, "due_after_h": 2.0}),
        ("shot-*", {"weight": 2.0}),
    ]
    assert [r.where for r in rules] == [f"{f}: line 2", f"{f}: line 4"]


def test_a_mapping_field_over_the_csv_modules_limit_is_one_line_naming_the_file_and_line(tmp_path, capsys):
    f = tmp_path / "map.csv"
    f.write_text("job,weight\nshot-a,1\n" + "x" * 140_000 + ",2\n")
    code = cli.main(["opencue", "sync", "--show", "film", "--cuebot", "127.0.0.1:1", "--mapping", str(f)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"sched opencue: error: {f}: line 3: not a readable CSV file (field larger")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_priority_range_beyond_opencues_32_bits_is_refused_in_a_dry_run_too(conf, capsys, dry_run):
    with FakeCuebot() as cue:
        good_jobs(cue)
        more = ["--priority-range", "3000000000:3000000010"] + (["--dry-run"] if dry_run else [])
        code, out = sync(conf, cue, *more, capsys=capsys)
        assert code == 2 and out.out == "" and cue.set_calls == []
        assert out.err == (
            "sched opencue: error: --priority-range: expected 0 <= LO < HI <= 2147483647 "
            "(OpenCue's priorities are 32-bit integers), got '3000000000:3000000010'\n"
        )
        code, out = sync(conf, cue, "--priority-range", "2147483637:2147483647", capsys=capsys)
        assert code == 0, out.err
        prios = sorted(cue.priorities().values())  # the range's top end: set, and read back
        assert len(set(prios)) == 3 and 2147483637 <= prios[0] and prios[-1] <= 2147483647


# --------------------------------------------------------------------------- item 14: the small ones


def test_a_job_name_with_control_characters_cannot_forge_a_line_of_output(conf, capsys):
    names = ["a\nset forged: priority 1 -> 99999", "b\r\x1b[2Jc\u2028", "back\\slash"]
    with FakeCuebot() as cue:
        for name in names:
            cue.add_job(name, waiting=10, avg_frame_s=60, start_time=int(NOW))
        bad = cue.add_job("z\nskipped forged: nothing", waiting=10, avg_frame_s=60, start_time=int(NOW))
        cue.add_comment(bad, "sched", "weight: heavy")
        cue.add_job("zz", waiting=10, avg_frame_s=60, start_time=int(NOW))
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        lines = out.out.splitlines()
        assert len(lines) == 3 + 1 + 1  # 3 changes (zz, the last, keeps 1), 1 skipped, the summary
        assert not any(
            "forged" in line and not line.startswith(("set a\\n", "skipped z\\n")) for line in lines
        )
        assert "set a\\nset forged: priority 1 -> 99999: priority 1 -> " in out.out
        assert "set b\\r\\x1b[2Jc\\u2028: priority 1 -> " in out.out
        assert "set back\\\\slash: priority 1 -> " in out.out
        assert (
            "skipped z\\nskipped forged: nothing: job z\\nskipped forged: nothing: comment 'sched'" in out.out
        )
        assert len(cue.set_calls) == 3  # the names Cuebot knows are the names as they are


def test_mapping_rows_naming_one_job_are_found_by_name_and_the_first_match_still_wins(tmp_path):
    f = tmp_path / "map.csv"
    rows = [f"shot-{i:05d},{1 + i % 7}" for i in range(20_000)]
    f.write_text("job,weight\n" + "\n".join(rows[:10] + ["shot-0001[0-9],50"] + rows[10:] + ["*,99"]) + "\n")
    m = mapping.read_mapping(f)
    # only the two wildcard rows are tried in turn against a name; the others are a dict's keys
    assert len(m) == 20_002 and len(m.names) == 20_000 and [pos for pos, _ in m.patterns] == [10, 20_001]
    assert mapping.job_values("shot-00003", None, m) == {"weight": 4.0}  # its own row, before the pattern
    assert mapping.job_values("shot-00012", None, m) == {"weight": 50.0}  # the pattern row comes first
    assert mapping.job_values("shot-00020", None, m) == {"weight": 7.0}
    assert mapping.job_values("other", None, m) == {"weight": 99.0}
    # the same answer as trying every row in turn with fnmatch, exact names and patterns mixed
    rng = random.Random(0)
    patterns = ["a", "b", "ab", "a*", "*b", "?", "[ab]b", "a?", "*", "ba", "[!a]*", "a", "b"]
    for _ in range(100):
        rules = [mapping.Rule(p, {"weight": float(i + 1)}) for i, p in enumerate(rng.sample(patterns, 7))]
        m = mapping.Mapping(rules)
        for name in ["a", "b", "ab", "ba", "aa", "bb", "abc", ""]:
            first = next((r.values for r in rules if fnmatch.fnmatchcase(name, r.pattern)), {})
            assert mapping.job_values(name, None, m) == mapping.job_values(name, None, rules) == first


def test_more_wildcard_rows_than_the_limit_refuse_the_mapping_naming_the_limit(tmp_path):
    f = tmp_path / "map.csv"
    n = 1000  # mapping.MAX_MAPPING_PATTERNS, as docs/opencue.md gives it
    f.write_text("job,weight\nexact,1\n" + "".join(f"sq{i:04d}-*,1\n" for i in range(n + 5)))
    with pytest.raises(
        mapping.MappingError, match=rf"line {n + 3}: more than {n} rows whose job has a wildcard"
    ):
        mapping.read_mapping(f)
    f.write_text("job,weight\n" + "".join(f"sq{i:04d}-*,1\n" for i in range(n)) + "exact,1\n" * 5000)
    assert len(mapping.read_mapping(f)) == n + 5000  # exact names: any number


def test_a_show_with_more_jobs_than_ranks_limit_is_refused_with_the_count(conf, capsys, monkeypatch):
    # the sync's limit is rank()'s own; lowered here so that the test needs a few jobs, not 20,001
    assert opencue.MAX_RANK_TASKS is limits.MAX_RANK_TASKS == 20_000
    monkeypatch.setattr(opencue, "MAX_RANK_TASKS", 4)
    with FakeCuebot() as cue:
        good_jobs(cue, 5)
        cue.add_job("paused", is_paused=True)  # not counted: nothing of it waits
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 2 and out.out == "" and cue.set_calls == []
        assert out.err == (
            "sched opencue: error: show 'film': 5 pending jobs with waiting frames, more than rank()'s "
            "limit of 4 (sched.limits.MAX_RANK_TASKS); no priority was set\n"
        )
        monkeypatch.setattr(opencue, "MAX_RANK_TASKS", 5)
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0 and "5 pending jobs ranked" in out.out


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--timeout-s", "0", "--timeout-s: expected a finite number > 0 and at most 86400 (seconds), got 0"),
        (
            "--timeout-s",
            "-1",
            "--timeout-s: expected a finite number > 0 and at most 86400 (seconds), got -1",
        ),
        (
            "--timeout-s",
            "nan",
            "--timeout-s: expected a finite number > 0 and at most 86400 (seconds), got nan",
        ),
        (
            "--timeout-s",
            "inf",
            "--timeout-s: expected a finite number > 0 and at most 86400 (seconds), got inf",
        ),
        (
            "--timeout-s",
            "1e10",
            "--timeout-s: expected a finite number > 0 and at most 86400 (seconds), got 1e+10",
        ),
        ("--default-due-h", "inf", "--default-due-h: expected hours >= 0 and at most 2.77778e+08"),
    ],
)
def test_a_timeout_or_due_that_is_no_time_is_refused_at_the_option(conf, capsys, option, value, message):
    with FakeCuebot() as cue:
        good_jobs(cue)
        code, out = sync(conf, cue, option, value, capsys=capsys)
        assert code == 2 and cue.set_calls == []
        assert out.err.startswith(f"sched opencue: error: {message}") and len(out.err.splitlines()) == 1


def test_a_column_given_twice_refuses_the_mapping_naming_it_and_the_file(tmp_path):
    f = tmp_path / "map.csv"
    f.write_text("job,weight,due_after_h,weight\nshot-*,1,2,3\n")
    with pytest.raises(mapping.MappingError, match=r"map.csv: line 1: column 'weight' appears twice"):
        mapping.read_mapping(f)


# --------------------------------------------------------------------------- round 5: a live Cuebot's faults


def test_a_job_gone_between_the_listing_and_its_update_is_skipped_and_the_others_are_set(conf, capsys):
    with FakeCuebot() as cue:
        ids = {f"good-{i}": jid for i, jid in enumerate(good_jobs(cue, 4))}
        code, out = sync(conf, cue, "--dry-run", capsys=capsys)
        planned = re.findall(r"would set (good-\d): priority 1 -> (\d+)", out.out)
        assert code == 0 and len(planned) == 3, out.out  # the last in rank order keeps its priority 1
        gone = planned[1][0]  # the first change is made before the job goes
        cue.vanish_after_listing(ids[gone])
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        assert cue.set_calls == [(ids[name], int(p)) for name, p in planned if name != gone]
        assert (
            f"skipped {gone}: job {gone}: gone from Cuebot before its priority was set (NOT_FOUND" in out.out
        )
        assert out.out.endswith(
            "show film: 4 pending jobs ranked by atc, 2 priorities changed, 1 kept, 1 skipped\n"
        )
        assert ids[gone] not in cue.jobs and cue.calls["SetPriority"] == 3


def test_a_job_gone_before_its_comment_is_read_is_skipped_and_the_others_are_ranked(conf, capsys):
    with FakeCuebot() as cue:
        ids = good_jobs(cue, 3)
        cue.add_comment(ids[0], "sched", "priority: high")
        cue.vanish_after_listing(ids[0])
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 0, out.err
        assert (
            "skipped good-0: job good-0: gone from Cuebot before its comments were read (NOT_FOUND" in out.out
        )
        assert out.out.endswith(
            "show film: 2 pending jobs ranked by atc, 1 priorities changed, 1 kept, 1 skipped\n"
        )
        assert len(cue.set_calls) == 1 and cue.set_calls[0][0] in ids[1:]


@pytest.mark.parametrize("method", ["GetJobs", "GetComments", "SetPriority"])
def test_a_cuebot_refusing_calls_in_a_burst_is_waited_out_and_the_sync_sets_what_an_unrefused_one_sets(
    conf, capsys, monkeypatch, method
):
    import grpc

    monkeypatch.setattr(opencue, "BACKOFF_S", 0.001)  # the waits, not what is decided
    final = []
    for refused in (0, opencue.ATTEMPTS - 1):
        with FakeCuebot() as cue:
            ids = good_jobs(cue, 4)
            for jid in ids:
                cue.add_comment(jid, "sched", "priority: normal")
            cue.refuse(method, grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
            code, out = sync(conf, cue, capsys=capsys)
            assert code == 0, out.err
            assert out.out.endswith(
                "show film: 4 pending jobs ranked by atc, 3 priorities changed, 1 kept, 0 skipped\n"
            )
            assert cue.refusals[method] == []  # each refusal met, the call made again
            final.append(cue.priorities())
    assert final[0] == final[1]


def test_a_refusal_that_outlasts_the_attempts_stops_the_sync_naming_the_job_and_what_was_made(
    conf, capsys, monkeypatch
):
    import grpc

    monkeypatch.setattr(opencue, "BACKOFF_S", 0.001)
    with FakeCuebot() as cue:
        good_jobs(cue, 3)
        cue.refuse("SetPriority", grpc.StatusCode.RESOURCE_EXHAUSTED, opencue.ATTEMPTS)
        code, out = sync(conf, cue, capsys=capsys)
        assert code == 2 and cue.set_calls == [] and cue.calls["SetPriority"] == opencue.ATTEMPTS
        assert re.fullmatch(
            r"sched opencue: error: job good-\d: cannot set its priority \(RESOURCE_EXHAUSTED: SetPriority "
            r"refused by the test \(Cuebot busy\)\) after 4 attempts; 0 of the sync's changes were made "
            r"before, a rerun makes the rest\n",
            out.err,
        ), out.err
