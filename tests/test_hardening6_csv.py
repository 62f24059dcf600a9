"""Issue 58 (hardening round 6), the CSV side: classes 1 (readers that trust quoting), 14 (ids
that differ by padding only) and 16 (formula cells written, numbers in other digits read).

Every CSV reader of the project is fed the class's input (parametrized): the scenario reader,
the results tables (``files.read_csv``), the farm mapping, the machines CSV, the bench logs and
the queue history. A record is one physical line: a stray quote is named by its line (refused by
the readers that refuse a file, one counted malformed record for those that skip), never a
silent merge of the lines after it. A fuzz test then mutates valid files (stray quotes, NULs,
CR and LF mixes, byte-order marks, repeated lines): each reader refuses naming the file, or
every data line of the input is accounted for as kept or skipped.
"""

import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sched import files
from sched.config import thawed
from sched.data import machines as MA
from sched.data.bench.bench_logs import CalibrationError, read_bench
from sched.data.scenario import Scenario, ScenarioError, read_scenario, write_scenario
from sched.data.workload.history import HistoryError, HistoryStats, read_history
from sched.errors import SchedError
from sched.farms import mapping as MP
from sched.formats import csv_input

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_HEADER = "id,kind,arrival_s,duration_s,weight,due_s"
HISTORY_HEADER = "id,kind,submitted_at,priority"
PRIORITIES = {"low": {"weight": 1.0}, "high": {"weight": 4.0}}


def _scenario_rows(n):
    return [f"t{i},image,{i},10,1,{20 + i}" for i in range(n)]


def _history_rows(n):
    return [f"job-{i},image,{1717372800 + 60 * i},low" for i in range(n)]


def _bench_rows(n):
    return [f"image,{10 + i % 7}.5" for i in range(n)]


def _bench_options(share=0.05):
    from sched.config import validate_config

    opts = thawed(validate_config({}, "defaults").calibration)
    opts["max_bad_share"] = share
    return opts


# --------------------------------------------------------------------------- the readers
#
# Each: (header, row maker, read(path) -> number of records kept, the error it refuses with,
# whether it skips malformed records rather than refusing the file).


def _read_scenario(p):
    return len(read_scenario(p).frame)


def _read_table(p):
    return len(files.read_csv(p, SchedError))


def _read_mapping(p):
    return len(MP.read_mapping(p))


def _read_machines(p):
    return len(MA.speeds(str(p), "machines"))


def _read_bench(p, share=1.0):
    log = read_bench(p, _bench_options(share))
    assert len(log.records) + len(log.bad) + log.ignored == log.total
    return log


def _read_history(p, share=1.0):
    st_ = HistoryStats(p, "csv")
    kept = sum(len(c) for c in read_history(p, PRIORITIES, share, stats=st_))
    assert kept == st_.valid and st_.valid + st_.bad_count == st_.total
    return st_


STRICT = {
    "scenario": (SCENARIO_HEADER, _scenario_rows, _read_scenario, ScenarioError),
    "table": (SCENARIO_HEADER, _scenario_rows, _read_table, SchedError),
    "mapping": (
        "job,weight",
        lambda n: [f"shot-{i},{1 + i % 3}" for i in range(n)],
        _read_mapping,
        MP.MappingError,
    ),
    "machines": (
        "name,speed",
        lambda n: [f"gpu{i},{1 + i % 2}" for i in range(n)],
        _read_machines,
        MA.MachinesError,
    ),
}


def _write(tmp_path, name, lines, end="\n"):
    p = tmp_path / name
    p.write_bytes((end.join(lines) + end).encode("utf-8"))
    return p


# --------------------------------------------------------------------------- class 1


@pytest.mark.parametrize("reader", sorted(STRICT))
@pytest.mark.parametrize(
    "spoil, why",
    [
        (lambda r: '"' + r, "a quoted field spans lines"),  # one stray quote: every later line swallowed
        (lambda r: r.replace(",", ',"', 1), "a quoted field spans lines"),
        (lambda r: r.replace(",", ',"x"y', 1), "not a readable CSV"),  # text after a closing quote
        (lambda r: r[:2] + "\0" + r[2:], "NUL"),
    ],
)
def test_a_strict_reader_refuses_a_line_that_is_no_record_naming_it(tmp_path, reader, spoil, why):
    header, rows, read, error = STRICT[reader]
    lines = [header, *rows(5)]
    assert read(_write(tmp_path, "ok.csv", lines)) == 5
    lines[3] = spoil(lines[3])  # file line 4
    p = _write(tmp_path, "bad.csv", lines)
    with pytest.raises(error) as info:
        read(p)
    msg = str(info.value)
    assert str(p) in msg and re.search(r"\bline 4\b", msg) and why in msg and "\n" not in msg


@pytest.mark.parametrize("reader", sorted(STRICT))
def test_two_stray_quotes_in_one_column_never_merge_rows(tmp_path, reader):
    # rows 2 and 4 of 5 open and close a quote: the csv module and pandas read 3 records
    header, rows, read, error = STRICT[reader]
    lines = [header, *rows(5)]
    lines[2] = '"' + lines[2]
    lines[4] = lines[4].replace(",", '",', 1)
    with pytest.raises(error, match=r"line 3\b.*a quoted field spans lines"):
        read(_write(tmp_path, "two.csv", lines))


@pytest.mark.parametrize("reader", sorted(STRICT))
def test_quoted_fields_on_their_line_and_every_line_end_still_read(tmp_path, reader):
    header, rows, read, _ = STRICT[reader]
    lines = [header, *rows(4)]
    first, rest = lines[2].split(",", 1)
    lines[2] = f'"{first}",{rest}'
    for end in ("\n", "\r\n", "\r"):
        assert read(_write(tmp_path, "q.csv", ["", *lines, "  "], end)) == 4


def test_a_stray_quote_in_the_shipped_bench_log_spoils_its_own_line_only(tmp_path):
    shipped = ROOT / "resources" / "bench" / "example_bench.csv"
    before = _read_bench(shipped, 0.05)
    lines = shipped.read_text().splitlines()
    lines[199] = lines[199].replace(",", ',"', 1)  # line 200
    after = _read_bench(_write(tmp_path, "bench.csv", lines), 0.05)
    assert after.total == before.total
    assert len(after.records) == len(before.records) - 1
    assert (200, csv_input.SPANS) in after.bad
    # text after a closing quote and a NUL: malformed at their lines too
    lines[299] = lines[299].replace(",", ',"x"y', 1)
    lines[399] = "\0" + lines[399]
    after = _read_bench(_write(tmp_path, "bench.csv", lines), 0.05)
    assert {200, 300, 400} <= {line for line, _ in after.bad}
    assert len(after.records) == len(before.records) - 3


def test_a_bench_log_past_its_share_stops_naming_every_skipped_line(tmp_path):
    lines = ["kind,duration_s", *_bench_rows(40)]
    for i in range(2, 40, 5):  # 8 of 40 lines spoiled: 20 % > 5 %
        lines[i] = '"' + lines[i]
    p = _write(tmp_path, "b.csv", lines)
    with pytest.raises(CalibrationError, match=r"8 of 40 records are malformed") as info:
        _read_bench(p, 0.05)
    msg = str(info.value)
    assert "line 3: a quoted field spans lines" in msg
    for line in range(3, 41, 5):  # every skipped record named, the first five with their reason
        assert re.search(rf"\b{line}\b", msg)
    assert len(_read_bench(p, 0.25).bad) == 8


def test_a_history_line_that_is_no_record_is_one_named_malformed_record(tmp_path):
    lines = [HISTORY_HEADER, *_history_rows(40)]
    lines[5] = '"' + lines[5]
    lines[10] = lines[10].replace(",image,", ',"image"x,', 1)
    lines[15] = lines[15] + "\0"
    st_ = _read_history(_write(tmp_path, "h.csv", lines))
    assert st_.total == 40 and st_.valid == 37
    reasons = dict(st_.bad)
    assert reasons[6] == csv_input.SPANS and "not a readable CSV" in reasons[11] and "NUL" in reasons[16]
    with pytest.raises(HistoryError, match=r"3 of 40 records are malformed.*line 6: a quoted field spans"):
        _read_history(_write(tmp_path, "h.csv", lines), 0.05)


def test_a_history_header_that_is_no_record_is_refused_naming_line_1(tmp_path):
    p = _write(tmp_path, "h.csv", ['"id,kind,submitted_at,priority', *_history_rows(3)])
    with pytest.raises(HistoryError, match=r"h\.csv: line 1: the header: a quoted field spans lines"):
        _read_history(p)


def test_blank_lines_before_the_header_are_skipped_by_every_reader(tmp_path):
    # a history whose first line was blank read as an "empty file (no task record)"
    st_ = _read_history(_write(tmp_path, "h.csv", ["", " \t", HISTORY_HEADER, *_history_rows(5)]))
    assert st_.total == st_.valid == 5
    log = _read_bench(_write(tmp_path, "b.csv", ["", "kind,duration_s", *_bench_rows(5)]))
    assert log.total == len(log.records) == 5 and [r["line"] for r in log.records] == [3, 4, 5, 6, 7]
    for header, rows, read, _ in STRICT.values():
        assert read(_write(tmp_path, "s.csv", ["", "  ", header, *rows(3)])) == 3


# --------------------------------------------------------------------------- class 14


def test_history_ids_differing_by_padding_are_one_task(tmp_path):
    rows = _history_rows(10)
    padded = rows[4].replace("job-4,", "  job-2 ,", 1)  # job-2 again, padded
    st_ = HistoryStats(tmp_path / "h.csv", "csv")
    p = _write(tmp_path, "h.csv", [HISTORY_HEADER, *rows[:4], padded, *rows[5:]])
    chunks = list(read_history(p, PRIORITIES, 1.0, stats=st_))
    ids = [i for c in chunks for i in c.id]
    assert len(ids) == 9 and "job-2" in ids and all(i == i.strip() for i in ids)
    assert st_.bad == [(6, "id: 'job-2' repeats h.csv:4 (the same task twice)")]
    # JSON Lines the same
    j = tmp_path / "h.jsonl"
    j.write_text(
        '{"id": "a", "kind": "image", "submitted_at": 1717372800, "priority": "low"}\n'
        '{"id": " a\\t", "kind": "image", "submitted_at": 1717372900, "priority": "low"}\n'
    )
    st_ = HistoryStats(j, "jsonl")
    assert sum(len(c) for c in read_history(j, PRIORITIES, 1.0, stats=st_)) == 1 and st_.bad_count == 1
    # an id of white space only is missing
    p = _write(tmp_path, "h.csv", [HISTORY_HEADER, *rows[:3], rows[3].replace("job-3", "   ", 1)])
    st_ = HistoryStats(p, "csv")
    list(read_history(p, PRIORITIES, 1.0, stats=st_))
    assert st_.bad == [(5, "id: missing value")]


@pytest.mark.parametrize("pad", [" ", "\t", "\u00a0", "\u3000", "\x1c"])
def test_ids_are_normalised_alike_in_every_reader(tmp_path, pad):
    # the same rule (str.strip) in scenarios, histories, mappings and machines
    assert csv_input.normal_id(f"{pad}a{pad}") == "a"
    p = _write(tmp_path, "s.csv", [SCENARIO_HEADER, "a,image,0,10,1,20", f'"{pad}a{pad}",image,0,10,1,20'])
    with pytest.raises(ScenarioError, match="duplicate id 'a'"):
        read_scenario(p)
    p = _write(
        tmp_path, "h.csv", [HISTORY_HEADER, f'"{pad}a{pad}",image,1717372800,low', "a,image,1717372900,low"]
    )
    assert _read_history(p).bad_count == 1
    p = _write(tmp_path, "m.csv", ["job,weight", f'"{pad}shot-a{pad}",3'])
    rules = MP.read_mapping(p)
    assert rules.first("shot-a").values == {"weight": 3.0} and rules.first(f"{pad}shot-a ").values == {
        "weight": 3.0
    }
    p = _write(tmp_path, "g.csv", ["name,speed", "g1,1", f'"{pad}g1{pad}",1'])
    with pytest.raises(MA.MachinesError, match="name 'g1' repeated"):
        MA.speeds(str(p))


# --------------------------------------------------------------------------- class 16


@pytest.mark.parametrize("digits", ["1_000", "\u0661\u0662", "\uff11\uff12", "1\u20032", "\u0663.5"])
def test_numbers_in_other_digits_are_refused_by_every_csv_reader(tmp_path, digits):
    assert csv_input.number(digits) is None
    p = _write(tmp_path, "s.csv", [SCENARIO_HEADER, f"a,image,0,{digits},1,20"])
    with pytest.raises(ScenarioError, match="duration_s.*is not a number"):
        read_scenario(p)
    p = _write(tmp_path, "m.csv", ["job,weight,due_after_h", f"shot-a,{digits},", f"shot-b,1,{digits}"])
    with pytest.raises(MP.MappingError, match=r"line 2: weight: expected a number"):
        MP.read_mapping(p)
    with pytest.raises(MP.MappingError, match=r"due_after_h: expected a number"):
        MP.check_values({"due_after_h": digits}, "comment")
    assert MP.comment_values(f"frames: {digits}", "job x")["frames"] == digits  # a feature stays text
    p = _write(tmp_path, "g.csv", ["name,speed", f"g1,{digits}"])
    with pytest.raises(MA.MachinesError, match="speed is not a number"):
        MA.speeds(str(p))
    with pytest.raises(MA.MachinesError, match="expected NxSPEED|speed is not a number"):
        MA.speeds(f"2x{digits}")
    bench = [r + ",5" for r in _bench_rows(30)]
    p = _write(tmp_path, "b.csv", ["kind,duration_s,width", *bench, f"image,{digits},5", f"image,5,{digits}"])
    log = _read_bench(p)
    assert [line for line, _ in log.bad] == [32, 33] and all("is not a number" in why for _, why in log.bad)
    p = _write(
        tmp_path,
        "h.csv",
        [
            HISTORY_HEADER + ",frames",
            *[r + ",2" for r in _history_rows(3)],
            f"z,image,1717372800,low,{digits}",
        ],
    )
    assert [line for line, _ in _read_history(p).bad] == [5]


def test_safe_cell_quotes_formula_text_only():
    for text in ["=1", "+a", "-a", "@a", "\ta", "\ra", "-", "+"]:
        assert csv_input.safe_cell(text) == "'" + text
    for value in ["-1.5", "+3", "-inf", " -2", "a=1", "", "'=1", -1.5, None, float("nan")]:
        assert csv_input.safe_cell(value) is value


def test_ascii_numbers_read_as_before():
    for text, value in [("12", 12.0), (" -1.5e3 ", -1500.0), ("+.5", 0.5), ("1.", 1.0)]:
        assert csv_input.number(text) == value
    assert np.isinf(csv_input.number("-inf")) and np.isnan(csv_input.number("nan"))


# (a cell holding a CR is written raw by pandas, a line end to every reader: not written here)
FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "-", "=1"]


def _cells(path):
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


@pytest.mark.parametrize("text", FORMULAS)
def test_formula_like_text_cells_are_written_quoted_by_every_writer(tmp_path, text):
    frame = pd.DataFrame({"id": [text, "a", "-3"], "n": [-1.5, 2.0, 3.0], text: ["x", "y", "z"]})
    wanted_row = ["'" + text, "-1.5", "x"]
    files.write_csv(tmp_path / "w.csv", frame)
    files.write_set([(tmp_path / "s.csv", files.csv_writer(frame))])
    sc = Scenario(
        "s",
        pd.DataFrame(
            {
                "id": [text],
                "kind": ["image"],
                "arrival_s": [-1.0],
                "duration_s": [1.0],
                "weight": [1.0],
                "due_s": [2.0],
            }
        ),
    )
    write_scenario(tmp_path / "sc.csv", sc)
    for name in ("w.csv", "s.csv"):
        cells = _cells(tmp_path / name)
        assert cells[0] == ["id", "n", "'" + text] and cells[1] == wanted_row
        assert cells[2] == ["a", "2.0", "y"] and cells[3] == ["-3", "3.0", "z"]  # a number stays a number
    assert _cells(tmp_path / "sc.csv")[1][:3] == ["'" + text, "image", "-1.0"]
    assert frame["id"].iloc[0] == text  # the caller's frame is not changed


def test_the_training_log_writes_safe_cells(tmp_path):
    from sched.learn.ppo import train_log

    rows = [{c: -1.0 for c in train_log.RESULT_COLUMNS} | {"iteration": "=1+1"}]
    train_log.write(tmp_path / "log.csv", rows)
    assert _cells(tmp_path / "log.csv")[1][0] == "'=1+1" and "-1.0" in _cells(tmp_path / "log.csv")[1]


def test_a_frame_without_formula_cells_is_written_as_pandas_writes_it(tmp_path):
    frame = pd.DataFrame(
        {"policy": ["atc", "ppo-1-warm", "-1e3"], "x": [-1.0, np.nan, 2.5], "b": [True, False, True]}
    )
    assert csv_input.safe_frame(frame) is frame
    files.write_csv(tmp_path / "a.csv", frame)
    frame.to_csv(tmp_path / "b.csv", index=False)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


# --------------------------------------------------------------------------- the fuzz test

INSERTS = ['"', '""', "\0", "\r", "\n", "\r\n", "\ufeff", ",", '"x"y']
MUTATION = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(INSERTS), st.floats(0, 1)),
    st.tuples(st.just("repeat"), st.just(""), st.floats(0, 1)),  # a record given twice
    st.tuples(st.just("ends"), st.sampled_from(["\r\n", "\r", "\n\n"]), st.floats(0, 1)),
    st.tuples(st.just("bom"), st.just("\ufeff"), st.just(0.0)),
)


def _mutate(text, mutations):
    for op, arg, where in mutations:
        if op == "insert":
            i = int(where * len(text))
            text = text[:i] + arg + text[i:]
        elif op == "repeat":
            lines = text.split("\n")
            i = int(where * (len(lines) - 1))
            text = "\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
        elif op == "ends":
            text = text.replace("\n", arg)
        else:
            text = arg + text
    return text


def _data_lines(text):
    """The records of a CSV text by the issue's rule: its physical lines, blank ones aside, the
    header (the first) aside; a leading byte-order mark dropped (as every reader decodes)."""
    text = text.removeprefix("\ufeff")
    lines = [s for s in re.split(r"\r\n|\r|\n", text) if s.strip(" \t")]
    return len(lines) - 1


FUZZED = {
    **{k: (v[0], v[1], v[2], v[3], False) for k, v in STRICT.items()},
    "bench": ("kind,duration_s", _bench_rows, lambda p: _read_bench(p).total, CalibrationError, True),
    "history": (HISTORY_HEADER, _history_rows, lambda p: _read_history(p).total, HistoryError, True),
}
_TMP = Path(tempfile.mkdtemp(prefix="fuzz-csv-"))


@pytest.mark.parametrize("reader", sorted(FUZZED))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_fuzzed_csv_files_are_refused_naming_them_or_every_record_is_accounted_for(reader, mutations):
    header, rows, read, error, skips = FUZZED[reader]
    text = _mutate("\n".join([header, *rows(6)]) + "\n", mutations)
    p = _TMP / f"{reader}.csv"
    p.write_bytes(text.encode("utf-8"))
    try:
        counted = read(p)
    except error as exc:
        msg = str(exc)
        assert "\n" not in msg and str(p) in msg, msg
        return
    # kept (strict readers) or kept + skipped (bench, history): every data line, no more
    assert counted == _data_lines(text), (reader, repr(text))


JSON_DOC = (
    '{"tasks": [{"id": "a", "weight": 1.5, "due": null}, {"id": "b", "tags": [1, 2, true]}], "n": -3e2}'
)
JSON_INSERTS = ['"', "{", "}", "[", "]", ",", ":", "\0", "\ufeff", "NaN", "1e999", '"id": 1, ', "\\", "\n"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(JSON_INSERTS), st.floats(0, 1)), min_size=1, max_size=4))
def test_fuzzed_json_is_a_value_or_the_one_error(mutations):
    from sched.formats.json_input import parse

    class Bad(SchedError):
        pass

    text = JSON_DOC
    for ins, where in mutations:
        i = int(where * len(text))
        text = text[:i] + ins + text[i:]
    try:
        value = parse(text, "doc.json", Bad)
    except Bad as exc:
        assert str(exc).startswith("doc.json") and "\n" not in str(exc)
        return
    assert isinstance(value, (dict, list, str, int, float, bool, type(None)))


def test_task_times_job_ids_are_read_without_padding(tmp_path):
    import json

    from sched.farms import task_times

    p = tmp_path / "times.json"
    doc = {"format": task_times.FORMAT, "farm": "f", "queue": "q", "jobs": {" job-1\t": [3, 2.5]}}
    p.write_text(json.dumps(doc))
    assert task_times.read(p, "f", "q") == ({"job-1": (3, 2.5)}, None)
    doc["jobs"]["job-1"] = [4, 1.0]  # the same job twice: both dropped, named, measured again
    doc["jobs"]["job-2"] = [1, 1.0]
    p.write_text(json.dumps(doc))
    times, warning = task_times.read(p, "f", "q")
    assert times == {"job-2": (1, 1.0)}
    assert "jobs.job-1: the same job twice" in warning and str(p) in warning


def test_a_key_given_twice_in_a_json_lines_record_is_that_records_fault(tmp_path):
    # issue 58, class 14: the JSON Lines readers refuse a repeated key as every JSON reader does
    # (sched.formats.json_input.unique_object); the line is one named, counted malformed record
    shipped = ROOT / "resources" / "bench" / "example_bench.jsonl"
    lines = shipped.read_text().splitlines()
    lines[2] = lines[2].replace('"duration_s":', '"duration_s": 1.0, "duration_s":', 1)
    p = tmp_path / "b.jsonl"
    p.write_text("\n".join(lines) + "\n")
    log = _read_bench(p)
    assert [line for line, _ in log.bad] == [3] and "appears twice" in log.bad[0][1]
    assert len(log.records) == len(lines) - 1
    j = tmp_path / "h.jsonl"
    j.write_text(
        '{"id": "a", "kind": "image", "submitted_at": 1717372800, "priority": "low"}\n'
        '{"id": "b", "id": "c", "kind": "image", "submitted_at": 1717372900, "priority": "low"}\n'
    )
    st_ = HistoryStats(j, "jsonl")
    assert sum(len(c) for c in read_history(j, PRIORITIES, 1.0, stats=st_)) == 1
    assert st_.bad_count == 1 and st_.bad[0][0] == 2 and "appears twice" in st_.bad[0][1]
