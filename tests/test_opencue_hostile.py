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

from sched import cli  # noqa: E402
from sched.serve import opencue_mapping as mapping  # noqa: E402

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
    model stands in for sched.data.calibration's: 2 s a frame)."""
    import sched.data.calibration as cal

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


def test_a_column_given_twice_refuses_the_mapping_naming_it_and_the_file(tmp_path):
    f = tmp_path / "map.csv"
    f.write_text("job,weight,due_after_h,weight\nshot-*,1,2,3\n")
    with pytest.raises(mapping.MappingError, match=r"map.csv: line 1: column 'weight' appears twice"):
        mapping.read_mapping(f)
