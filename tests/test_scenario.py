"""Scenario generation and the scenario file contract."""

import numpy as np
import pandas as pd
import pytest

from sched.config import ConfigError, validate_config
from sched.data.distributions import mean_duration
from sched.data.scenario import (
    ScenarioError,
    generate,
    read_scenario,
    scenario_model,
    validate_frame,
    write_scenario,
)

GOOD = "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,10,1,20\n2,video,5,30,2,40\n"


def test_same_seed_same_scenario_and_different_seed_differs(cfg):
    a, b, c = (
        generate(scenario_model(cfg), 11),
        generate(scenario_model(cfg), 11),
        generate(scenario_model(cfg), 12),
    )
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not np.array_equal(a.frame["arrival_s"], c.frame["arrival_s"])


def test_load_sets_the_arrival_rate(cfg):
    # over many tasks, total work / horizon approaches the configured load
    for load in (0.5, 0.85):
        sc = generate(scenario_model(cfg), 3, tasks=40000, load=load)
        arr, dur = sc.frame["arrival_s"].to_numpy(), sc.frame["duration_s"].to_numpy()
        assert dur.sum() / arr[-1] == pytest.approx(load, rel=0.05)
        assert np.all(np.diff(arr) > 0)


def test_kinds_priorities_and_durations_follow_config(cfg):
    sc = generate(scenario_model(cfg), 4, tasks=20000)
    f = sc.frame
    assert (f["kind"] == "image").mean() == pytest.approx(0.8, abs=0.02)
    assert f.loc[f["kind"] == "image", "duration_s"].median() == pytest.approx(25.0, rel=0.05)
    assert (f["weight"] == 8).mean() == pytest.approx(0.05, abs=0.01)
    assert f["priority"].isin(cfg["scenario"]["priorities"]).all()
    assert np.allclose(f["estimate_s"], f["duration_s"])  # no noise by default
    slack = f["due_s"] - f["arrival_s"] - f["estimate_s"]
    assert slack.min() >= 0 and slack.max() <= 2 * f["estimate_s"].max() + 3600


def test_estimate_noise(cfg):
    c = cfg.replace(scenario={"estimate_noise_sigma": 0.3})
    f = generate(scenario_model(c), 4, tasks=20000).frame
    ratio = np.log(f["estimate_s"] / f["duration_s"])
    assert ratio.std() == pytest.approx(0.3, rel=0.05)
    # common random numbers: the true durations do not move with the noise
    assert np.allclose(f["duration_s"], generate(scenario_model(cfg), 4, tasks=20000).frame["duration_s"])


def test_load_change_keeps_the_other_draws(cfg):
    a, b = generate(scenario_model(cfg), 9, load=0.7).frame, generate(scenario_model(cfg), 9, load=0.95).frame
    assert np.array_equal(a["duration_s"], b["duration_s"])
    assert np.array_equal(a["weight"], b["weight"])


def test_mean_duration_formula(cfg):
    specs = scenario_model(cfg).kind_specs()
    sample = generate(scenario_model(cfg), 1, tasks=50000).frame["duration_s"].mean()
    assert mean_duration(specs) == pytest.approx(sample, rel=0.03)


def test_bad_seed(cfg):
    for bad in (-1, 1.5, "3"):
        with pytest.raises(ValueError, match="seed"):
            generate(scenario_model(cfg), bad)


def test_overlapping_seed_ranges_refused():
    cfg = {"seeds": {"train": {"start": 0, "count": 100}, "test": {"start": 50, "count": 10}}}
    with pytest.raises(ConfigError, match="seeds.train .* overlaps seeds.test"):
        validate_config(cfg)


def test_round_trip(tmp_path, cfg):
    sc = generate(scenario_model(cfg), 5, tasks=50)
    write_scenario(tmp_path / "s.csv", sc)
    back = read_scenario(tmp_path / "s.csv")
    for a, b in zip(sc.arrays, back.arrays):
        assert np.array_equal(a, b)
    assert list(back.frame["priority"]) == list(sc.frame["priority"])  # extra column kept


def test_static_and_unsorted_and_late_arrivals_are_valid(tmp_path):
    p = tmp_path / "static.csv"
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s\nb,image,0,10,1,5\na,video,0,3,2,0\n")
    assert len(read_scenario(p)) == 2
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s\nx,image,50,10,1,20\ny,image,0,3,2,9\n")
    assert read_scenario(p).frame["id"].tolist() == ["x", "y"]


def test_optional_estimate_column(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("id,kind,arrival_s,duration_s,weight,due_s,estimate_s\n1,image,0,10,1,20,12\n")
    arrays = read_scenario(p).arrays
    assert arrays[1][0] == 10 and arrays[2][0] == 12


BAD = [
    ("id,kind,arrival_s,duration_s,due_s\n1,image,0,10,20\n", "missing column.*weight"),
    ("id,kind,arrival_s,duration_s,weight,due_s\n", "no rows"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,ten,1,20\n",
        r"row 1 \(line 2\) field duration_s: 'ten' is not a number",
    ),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,10,1,20\n2,image,0,10,1,nan\n",
        r"row 2 \(line 3\) field due_s: 'nan' is not finite",
    ),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,inf,10,1,20\n",
        "field arrival_s: 'inf' is not finite",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,0,1,20\n", "field duration_s: must be > 0"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s,estimate_s\n1,image,0,3,1,20,-1\n",
        "field estimate_s: must be > 0",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,0,20\n", "field weight: must be > 0"),
    (
        "id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,1,20\n1,image,1,3,1,20\n",
        r"row 2 \(line 3\) field id: duplicate id '1' \(first at row 1\)",
    ),
    ("id,kind,arrival_s,duration_s,weight,due_s\n1,image,0,3,,20\n", "field weight: missing value"),
    ("id,kind,arrival_s,duration_s,weight,due_s\n,image,0,3,1,20\n", "field id: missing value"),
]


@pytest.mark.parametrize("text,match", BAD)
def test_bad_scenario_files_are_refused(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ScenarioError, match=match) as info:
        read_scenario(p)
    assert str(p) in str(info.value)


def test_empty_file_refused(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("")
    with pytest.raises(ScenarioError, match="empty file"):
        read_scenario(p)


def test_validate_frame_names_the_source():
    frame = pd.DataFrame(
        {"id": [1], "kind": ["image"], "arrival_s": [0], "duration_s": [-2], "weight": [1], "due_s": [3]}
    )
    with pytest.raises(ScenarioError, match="my-table: row 1"):
        validate_frame(frame, "my-table")


# --------------------------------------------------------------------------- issue 13: file shape and bounds

HEADER = "id,kind,arrival_s,duration_s,weight,due_s\n"

SHAPE = [
    # every row one field longer: pandas took the first column as the index (defect 4)
    (
        HEADER + "a,image,0,10,1,20,30\nb,image,0,10,1,20,30\n",
        r"row 1 \(line 2\): 7 fields, the header \(line 1\) has 6",
    ),
    (
        HEADER + "a,image,0,10,1,20\nb,image,0,10\n",
        r"row 2 \(line 3\): 4 fields, the header \(line 1\) has 6",
    ),
    # a blank line, then a quoted field over two lines: a record is one line (issue 58), so the
    # line that leaves the quote open is named
    (
        HEADER + 'a,image,0,10,1,20\n\nb,image,0,10,1,20\n"c\nd",image,0,10,1,20\ne,image,0,10,1,20,30\n',
        r"row 3 \(line 5\): a quoted field spans lines",
    ),
    (
        HEADER + 'a,image,0,10,1,20\n\nb,image,0,10,1,20\n"c d",image,0,10,1,20\ne,image,0,10,1,20,30\n',
        r"row 4 \(line 6\): 7 fields",
    ),
    (
        HEADER.rstrip("\n") + ",id\na,image,0,10,1,20,x\n",
        r"line 1: column 'id' appears twice \(fields 1 and 7\)",
    ),
    (HEADER.rstrip("\n") + ", weight \na,image,0,10,1,20,2\n", "column 'weight' appears twice"),
    (HEADER.rstrip("\n") + ",start_s\na,image,0,10,1,20,5\n", "column 'start_s' is one a schedule adds"),
    (HEADER.rstrip("\n") + ",machine\na,image,0,10,1,20,0\n", "column 'machine' is one a schedule adds"),
    (HEADER.rstrip("\n") + ",weighted_tardiness_s\na,image,0,10,1,20,0\n", "'weighted_tardiness_s' is one"),
    # ids are stripped, then must be distinct
    (HEADER + "a  ,image,0,10,1,20\na,image,0,10,1,20\n", r"row 2 \(line 3\) field id: duplicate id 'a'"),
    # finite but absurd values would make the summary sums Infinity (defect 5)
    (HEADER + "a,image,0,1e308,1,20\n", r"row 1 \(line 2\) field duration_s: '1e308' is out of range"),
    (HEADER + "a,image,-2e12,10,1,20\n", "field arrival_s: '-2e12' is out of range"),
    (HEADER + "a,image,0,10,1,1e13\n", "field due_s: '1e13' is out of range"),
    (
        HEADER.rstrip("\n") + ",estimate_s\na,image,0,10,1,20,1e300\n",
        "field estimate_s: '1e300' is out of range",
    ),
    (HEADER + "a,image,0,10,1e7,20\n", r"field weight: '1e7' is out of range \(\|value\| <= 1e\+06\)"),
    # a cell error after a blank line names the file line, not row + 1
    (
        HEADER + "a,image,0,10,1,20\n\n\nb,image,0,10,x,20\n",
        r"row 2 \(line 5\) field weight: 'x' is not a number",
    ),
]


@pytest.mark.parametrize("text,match", SHAPE)
def test_misshapen_and_out_of_range_files_are_refused_naming_the_row(tmp_path, text, match):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ScenarioError, match=match) as info:
        read_scenario(p)
    assert str(info.value).startswith(f"{p}: ")


def test_values_at_the_limits_are_accepted(tmp_path):
    from sched.limits import MAX_SECONDS, MAX_WEIGHT

    p = tmp_path / "edge.csv"
    p.write_text(HEADER + f"a,image,{-MAX_SECONDS!r},{MAX_SECONDS!r},{MAX_WEIGHT!r},{MAX_SECONDS!r}\n")
    f = read_scenario(p).frame
    assert f["duration_s"].iloc[0] == MAX_SECONDS and f["weight"].iloc[0] == MAX_WEIGHT


def test_ids_are_stripped(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text(HEADER + '  a  ,image,0,10,1,20\n" b ",image,0,10,1,20\n')
    assert read_scenario(p).frame["id"].tolist() == ["a", "b"]


def test_valid_files_in_every_layout_read_as_before(tmp_path):
    # a byte-order mark, CRLF line ends, a quoted comma, a quoted quote, blank and white
    # lines, spaces after commas, an unnamed trailing column (a quoted line break: refused,
    # issue 58)
    p = tmp_path / "s.csv"
    p.write_bytes(
        b"\xef\xbb\xbfid,kind,arrival_s,duration_s,weight,due_s,note,\r\n"
        b'1,image,0,10,1,20,"a, b",\r\n\r\n   \r\n'
        b'2, video , 1e1,5,2,  30,"one ""line""",x\r\n'
    )
    f = read_scenario(p).frame
    assert list(f.columns) == [
        "id",
        "kind",
        "arrival_s",
        "duration_s",
        "weight",
        "due_s",
        "note",
        "Unnamed: 7",
    ]
    assert f["id"].tolist() == ["1", "2"] and f["kind"].tolist() == ["image", "video "]
    assert f["arrival_s"].tolist() == [0.0, 10.0] and f["due_s"].tolist() == [20.0, 30.0]
    assert f["note"].tolist() == ["a, b", 'one "line"'] and f["Unnamed: 7"].tolist() == ["", "x"]


def test_a_generated_scenario_reads_back_identically(tmp_path, cfg):
    sc = generate(scenario_model(cfg), 5, tasks=300)
    write_scenario(tmp_path / "s.csv", sc)
    back = read_scenario(tmp_path / "s.csv").frame
    for col in ("arrival_s", "duration_s", "weight", "due_s", "estimate_s"):
        assert np.array_equal(back[col].to_numpy(), sc.frame[col].to_numpy())


def _fifo(path):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(path)
    return path


def test_unreadable_scenario_files_are_one_error_naming_them(tmp_path, monkeypatch):
    import os

    folder = tmp_path / "folder.csv"
    folder.mkdir()
    junk = tmp_path / "junk.csv"
    junk.write_bytes(b"\xff\xfe\x00\x01\x80junk")
    cases = [
        (folder, "is a folder, not a file"),
        (junk, "not a UTF-8 text file"),
        # a FIFO with no writer: refused at once, not waited on
        (_fifo(tmp_path / "fifo.csv"), "not a regular file"),
        (tmp_path / "missing.csv", "file not found"),
        (tmp_path / "junk.csv" / "x.csv", "cannot read"),
    ]
    for path, match in cases:
        with pytest.raises(ScenarioError, match=match) as info:
            read_scenario(path)
        assert str(info.value).startswith(f"{path}: ")
    # chmod 000 does not stop root: make open() itself fail
    good = tmp_path / "good.csv"
    good.write_text(GOOD)
    real_open = os.open

    def denied(path, *args, **kwargs):
        if str(path) == str(good):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(ScenarioError, match=r"good.csv: cannot read \(permission denied\)"):
        read_scenario(good)


def test_scenario_files_past_the_size_limits_are_refused(tmp_path, monkeypatch):
    import sched.data.scenario as S

    p = tmp_path / "s.csv"
    p.write_text(HEADER + "".join(f"{i},image,0,10,1,20\n" for i in range(5)))
    monkeypatch.setattr(S, "MAX_SCENARIO_TASKS", 4)
    with pytest.raises(ScenarioError, match="more than 4 rows"):
        read_scenario(p)
    monkeypatch.setattr(S, "MAX_SCENARIO_TASKS", 5)
    assert len(read_scenario(p)) == 5
    monkeypatch.setattr(S, "MAX_SCENARIO_BYTES", 100)
    with pytest.raises(ScenarioError, match=r"s.csv: \d+ bytes, more than the 100 allowed"):
        read_scenario(p)


def test_read_csv_never_takes_a_column_as_the_index(tmp_path):
    from sched import files

    class Bad(ValueError):
        pass

    p = tmp_path / "t.csv"
    p.write_text("a,b\n1,2,3\n")
    with pytest.raises(Bad, match=r"t.csv: row 1 \(line 2\): 3 fields, the header \(line 1\) has 2"):
        files.read_csv(p, Bad)
    p.write_text("a,b\n1,2\n")
    frame, lines = files.read_csv_lines(p, Bad)
    assert frame.to_dict("list") == {"a": [1], "b": [2]} and lines == [2]
    p.write_text('a,b\n"1,2\n')
    with pytest.raises(Bad, match="t.csv"):
        files.read_csv(p, Bad)


def test_generation_is_bounded_before_allocating(cfg):
    from sched.data.scenario import SizeError, draw
    from sched.limits import MAX_MACHINES, MAX_SCENARIO_TASKS

    with pytest.raises(SizeError, match=f"tasks: must be at most {MAX_SCENARIO_TASKS}"):
        draw(scenario_model(cfg), 1, tasks=10**12)
    from sched.data.machines import MachinesError

    with pytest.raises(
        MachinesError, match=f"machines: 1000000000 GPUs, more than the limit of {MAX_MACHINES}"
    ):
        draw(scenario_model(cfg), 1, tasks=5, machines=10**9)
    with pytest.raises(MachinesError, match=f"more than the limit of {MAX_MACHINES}"):
        draw(scenario_model(cfg), 1, tasks=5, machines=f"{MAX_MACHINES}x1.0,1x0.5")
    with pytest.raises(ValueError, match="finite > 0"):
        draw(scenario_model(cfg), 1, tasks=5, load=float("inf"))


@pytest.mark.parametrize(
    "change, field",
    [
        ({"estimate_noise_sigma": 1000.0}, "estimate_s"),
        (
            {"kinds": {"a": {"share": 1, "distribution": "lognormal", "median_s": 1e12, "sigma": 1}}},
            "arrival_s",
        ),
        (
            {"kinds": {"a": {"share": 1, "distribution": "lognormal", "median_s": 10, "sigma": 900}}},
            "arrival_s",
        ),
    ],
)
def test_generated_times_beyond_the_limit_are_refused_without_warnings(cfg, change, field):
    import warnings

    from sched.data.scenario import SizeError

    c = cfg.to_dict()
    c["scenario"].update(change)  # kinds: replaced whole, not merged
    c = validate_config(c)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            SizeError, match=f"scenario seed 3: a drawn {field} of .* is beyond the 1e\\+12 s"
        ):
            generate(scenario_model(c), 3, tasks=50)


@pytest.mark.parametrize(
    "text",
    [
        "a,b\n1,2\n\n3,4\n",
        "a,b\r\n1,2\r\n  \r\n\r\n3,4",
        "a,b\r1,2\r\r3,4\r",
        "\n\na,b\n1, 2\n 3,4 \n\n",
        "a,b\n1,2\n3,4,5\n",
        "a,b\n1,2\n\n3\n",
    ],
)
def test_the_fast_and_the_quoting_csv_scans_agree(text):
    # scan_csv splits lines when the text holds no quote, else runs the csv module
    from sched import files

    def scan(t):
        try:
            return files.scan_csv(t, "t.csv", ValueError, skipinitialspace=True)
        except ValueError as exc:
            return str(exc)

    quoted = text.replace("a,", '"a",', 1)
    fast, slow = scan(text), scan(quoted)
    assert fast == slow
    assert isinstance(fast, tuple) or "fields, the header" in fast
