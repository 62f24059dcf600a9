"""Reading a queue history (sched.data.workload.history_io and .history):
issue 23, points 1, 2, 4, 5 and 7.

Each test names its point. The memory probes run the command line in a subprocess
under a 3,000,000 KiB address-space cap (`ulimit -v 3000000`), on files that are small
on disk: gzip members repeated (a bomb), or a sparse file (truncate).
"""

import gzip
import json
import resource
import subprocess
import sys
import time

import pytest

from sched.data.workload.history import HistoryError, HistoryStats, read_history
from sched.data.workload.workload_fit import calibrate_workload
from tests.conftest import ROOT

MONDAY = 1717372800  # 2024-06-03T00:00:00Z
HEADER = "id,kind,submitted_at,priority"
CAP_KIB = 3_000_000
MAX_HISTORY_LINE = (
    65_536  # sched.limits.MAX_HISTORY_LINE (checked below; not imported: the tests ran on the old code)
)


def _rows(n, step=2100, prefix="t"):  # 2,100 s apart: 300 rows span 7.3 days
    return [f"{prefix}{i},image,{MONDAY + step * i},low" for i in range(n)]


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def _fit(cfg, calibrated, path, **workload):
    c = cfg.replace(workload=workload)
    return calibrate_workload([path], c, calibrated.calibration)


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (CAP_KIB * 1024, CAP_KIB * 1024))


def _cli(calibrated, history, out, timeout=120):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sched",
            "--config",
            str(calibrated.config),
            "calibrate-workload",
            str(history),
        ]
        + ["--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=_capped,
        timeout=timeout,
    )


def _refused(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-2000:]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def _gzip_repeated(path, head, piece, times):
    """A gzip file of ``head`` then ``piece`` ``times`` times: members repeated, small on disk."""
    member = gzip.compress(piece, 9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(times):
            fh.write(member)
    return path


# 1. A stray quote


def test_stray_quote_is_refused_at_its_line_and_every_line_after_it_counted(tmp_path, cfg, calibrated):
    """A quoted field may not span lines in these exports: the line that leaves one open is one
    malformed record, and every line after it is a record of its own (none is swallowed)."""
    p = _write(
        tmp_path / "h.csv", [HEADER, *_rows(300), '"stray,image,1717372800,low', *_rows(3000, 200, "u")]
    )
    st = HistoryStats(p, "csv")
    n = sum(len(c) for c in read_history(p, cfg["scenario"]["priorities"], 0.05, stats=st))
    assert n == 3300 and st.total == 3301 and st.bad_count == 1
    assert st.bad == [(302, "a quoted field spans lines (unbalanced quote?)")]
    # past the share of malformed records: one line naming the file and the line, nothing kept
    many = _write(tmp_path / "m.csv", [HEADER, *_rows(30), *(['"stray,image,1717372800,low'] * 5)])
    with pytest.raises(HistoryError, match=r"m\.csv: 5 of 35 records are malformed") as exc:
        list(read_history(many, cfg["scenario"]["priorities"], 0.05, stats=HistoryStats(many, "csv")))
    assert "line 32: a quoted field spans lines" in str(exc.value)
    # a quoted field on one line is read as before
    ok = _write(tmp_path / "ok.csv", [HEADER, *_rows(300), '"q,1",image,1717372800,"low"'])
    st = HistoryStats(ok, "csv")
    chunks = list(read_history(ok, cfg["scenario"]["priorities"], 0.05, stats=st))
    assert st.bad_count == 0 and chunks[-1].id[-1] == "q,1"


def test_a_task_exported_twice_counts_once_and_the_repeat_is_named(tmp_path, cfg, calibrated):
    """Issue 47's campaign: the same id twice (a re-export, two files of one history) is one task;
    the repeat is a malformed record naming where the first is, and the fit counts the task once."""
    rows = _rows(300)
    p = _write(tmp_path / "h.csv", [HEADER, *rows, rows[5], rows[6]])
    st = HistoryStats(p, "csv")
    ids = [i for c in read_history(p, cfg["scenario"]["priorities"], 0.05, stats=st) for i in c.id]
    assert len(ids) == len(set(ids)) == 300 and st.valid == 300 and st.bad_count == 2
    assert st.bad == [
        (302, "id: 't5' repeats h.csv:7 (the same task twice)"),
        (303, "id: 't6' repeats h.csv:8 (the same task twice)"),
    ]
    # across files: the second file's record of a task the first holds is the repeat
    q = _write(tmp_path / "more.csv", [HEADER, rows[0], *_rows(40, prefix="v")])
    twice = calibrate_workload([p, q], cfg, calibrated.calibration)
    once = calibrate_workload(
        [_write(tmp_path / "once.csv", [HEADER, *rows, *_rows(40, prefix="v")])], cfg, calibrated.calibration
    )
    assert twice.data["tasks"] == once.data["tasks"] == 340
    assert [len(st.bad) for st in twice.stats] == [2, 1]
    assert twice.stats[1].bad == [(2, "id: 't0' repeats h.csv:2 (the same task twice)")]


# 2. Degenerate spans


def test_spans_under_a_week_refused_and_far_records_malformed(tmp_path, cfg, calibrated):
    five_hours = _write(tmp_path / "short.csv", [HEADER, *_rows(300, 60)])
    with pytest.raises(HistoryError, match=r"short\.csv: the history spans 5\.0 hours .*less than a week"):
        _fit(cfg, calibrated, five_hours)
    one_second = _write(
        tmp_path / "second.csv", [HEADER] + [f"t{i},image,{MONDAY + i / 300},low" for i in range(300)]
    )
    with pytest.raises(HistoryError, match=r"spans 1 s .*less than a week"):
        _fit(cfg, calibrated, one_second)
    # a typo dated 2099 no longer stretches the span: one malformed record, with its line
    typo = _write(tmp_path / "typo.csv", [HEADER, *_rows(300), "z,image,2099-01-01T00:00:00,low"])
    res = _fit(cfg, calibrated, typo)
    d = res.data
    assert d["tasks"] == 300 and d["span"]["weeks"] == pytest.approx(299 * 2100 / (7 * 86400))
    assert res.stats[0].bad_count == 1 and res.stats[0].bad[0][0] == 302
    assert "far outside the bulk" in res.stats[0].bad[0][1]
    assert d["sources"][0]["malformed"] == 1 and min(d["arrivals"]["rate_per_hour"]) > 1.0
    # the share of the week's hours holding tasks is reported
    assert d["arrivals"]["hours_with_tasks"] == 168 and d["arrivals"]["hours_with_tasks_share"] == 1.0
    # counted toward max_bad_share
    with pytest.raises(HistoryError, match=r"1 of 301 records are malformed.*line 302: submitted_at"):
        _fit(cfg, calibrated, typo, max_bad_share=0.0)


# 4. Bounded lines and bytes


def test_long_line_and_gzip_bomb_refused_in_bounded_memory(tmp_path, calibrated):
    # the header, then 4 GB of 'a' with no line end: about 4 MB on disk
    bomb = _gzip_repeated(tmp_path / "bomb.csv.gz", (HEADER + "\n").encode(), b"a" * (1 << 20), 4096)
    assert bomb.stat().st_size < 20 * 1024**2
    t = time.monotonic()
    r = _cli(calibrated, bomb, tmp_path / "o.json")
    _refused(r, "bomb.csv.gz", "line 2", f"longer than {MAX_HISTORY_LINE} bytes")
    assert time.monotonic() - t < 60 and not (tmp_path / "o.json").exists()
    # a sparse 4 GB .csv (the header, then NUL bytes): no disk used
    sparse = tmp_path / "sparse.csv"
    sparse.write_text(HEADER + "\n")
    subprocess.run(["truncate", "-s", "4G", str(sparse)], check=True)
    r = _cli(calibrated, sparse, tmp_path / "o.json")
    _refused(r, "sparse.csv", "MAX_HISTORY_BYTES")


def test_long_line_refused_at_its_line_and_decompressed_bytes_bounded(tmp_path, cfg, monkeypatch):
    import sched.data.workload.history_io as hio
    import sched.limits

    assert sched.limits.MAX_HISTORY_LINE == MAX_HISTORY_LINE
    pr = cfg["scenario"]["priorities"]
    long_line = _write(tmp_path / "long.jsonl", ['{"id": "a"}', '{"id": "' + "x" * MAX_HISTORY_LINE + '"}'])
    with pytest.raises(HistoryError, match=r"long\.jsonl: line 2: longer than 65536 bytes"):
        list(read_history(long_line, pr, 1.0))
    # the decompressed size of a .gz is bounded too (a small limit here, for speed)
    monkeypatch.setattr(hio, "MAX_HISTORY_BYTES", 1 << 20)
    gz = _gzip_repeated(
        tmp_path / "big.csv.gz", (HEADER + "\n").encode(), ("\n".join(_rows(1000)) + "\n").encode(), 100
    )
    assert gz.stat().st_size < (1 << 20)
    with pytest.raises(
        HistoryError, match=r"big\.csv\.gz: once decompressed, more than the 1048576 bytes allowed"
    ):
        list(read_history(gz, pr, 1.0))


def test_blank_lines_gzip_read_within_seconds(tmp_path, calibrated):
    blank = _gzip_repeated(tmp_path / "blank.jsonl.gz", b"", b"\n" * (1 << 20), 100)  # 100 MB of line ends
    t = time.monotonic()
    r = _cli(calibrated, blank, tmp_path / "o.json")
    _refused(r, "blank.jsonl.gz", "empty file")
    assert time.monotonic() - t < 15
    # records after the blank lines keep their line numbers
    rows = [json.dumps({"id": "t", "kind": "image", "submitted_at": MONDAY, "priority": "vip"})]
    tailed = tmp_path / "tailed.jsonl.gz"
    tailed.write_bytes(gzip.compress(b"\n" * 3_000_000 + ("\n".join(rows) + "\n").encode()))
    st = HistoryStats(tailed, "jsonl")
    with pytest.raises(HistoryError, match="line 3000001: priority: 'vip'"):
        list(read_history(tailed, {"low": {"weight": 1}}, 0.0, stats=st))


# 5. Stray JSON keys


def test_jsonl_stray_keys_are_not_columns(tmp_path, cfg, calibrated):
    lines = [
        json.dumps(
            {"id": f"t{i}", "kind": "image", "submitted_at": MONDAY + 40 * i, "priority": "low", f"x{i}": 1}
        )
        for i in range(20_000)
    ]
    p = _write(tmp_path / "keys.jsonl", lines)
    r = _cli(calibrated, p, tmp_path / "k.json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((tmp_path / "k.json").read_text())["tasks"] == 20_000
    import sched.data.workload.history_io as hio

    frames = list(hio.jsonl_chunks(hio.history_lines(open(p, "rb"), p), p, HistoryStats(p, "jsonl"), 100_000))
    assert list(frames[0][1].columns) == ["id", "kind", "submitted_at", "priority"]


# 7. One value, one malformed record


@pytest.mark.parametrize(
    "name, record, reason",
    [
        ("y2300.csv", "z,image,2300-01-01,low", "submitted_at: '2300-01-01' is not a time"),
        ("y30k.csv", "z,image,900000000000,low", "submitted_at: '900000000000' is not a time"),
        (
            "digits.jsonl",
            '{"id": "z", "kind": "image", "submitted_at": ' + "1" * 5001 + ', "priority": "low"}',
            "submitted_at: a number of more than 4300 digits",
        ),
    ],
)
def test_one_bad_value_is_one_malformed_record(tmp_path, cfg, calibrated, name, record, reason):
    good = _rows(300)
    if name.endswith(".jsonl"):
        good = [
            json.dumps({"id": f"t{i}", "kind": "image", "submitted_at": MONDAY + 2100 * i, "priority": "low"})
            for i in range(300)
        ]
        lines = [*good, record]
        line = 301
    else:
        lines = [HEADER, *good, record]
        line = 302
    p = _write(tmp_path / name, lines)
    res = _fit(cfg, calibrated, p)
    assert res.data["tasks"] == 300 and res.stats[0].bad_count == 1
    assert res.stats[0].bad[0][0] == line and res.stats[0].bad[0][1].startswith(reason)
    # past max_bad_share: one line naming the file, the line and the field; exit 2
    r = subprocess.run(
        [sys.executable, "-m", "sched", "--config", str(calibrated.config), "calibrate-workload", str(p)]
        + ["--out", str(tmp_path / "o.json"), "--max-bad-share", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    _refused(r, name, f"line {line}: {reason}")
    assert not (tmp_path / "o.json").exists()


def test_zlib_error_is_a_history_error(tmp_path, cfg):
    p = tmp_path / "bad.csv.gz"
    data = gzip.compress((HEADER + "\n" + "\n".join(_rows(100)) + "\n").encode())
    p.write_bytes(data[:20] + bytes(b ^ 0xFF for b in data[20:40]) + data[40:])
    with pytest.raises(HistoryError, match=r"bad\.csv\.gz: cannot read"):
        list(read_history(p, cfg["scenario"]["priorities"], 1.0))


def test_a_nan_due_in_json_lines_is_a_malformed_record(tmp_path, cfg):
    import json

    from sched.data.workload.history import HistoryStats, read_history

    p = tmp_path / "h.jsonl"
    rows = [
        {"id": f"t{i}", "kind": "image", "submitted_at": 1717372800 + 60 * i, "priority": "low"}
        for i in range(4)
    ]
    lines = [json.dumps(r) for r in rows]
    lines[2] = lines[2][:-1] + ', "due": NaN}'
    lines[3] = lines[3][:-1] + ', "due": null}'  # null: no deadline, as documented
    p.write_text("\n".join(lines) + "\n")
    stats = HistoryStats(p, "jsonl")
    chunks = list(read_history(p, cfg.scenario.priorities, 0.5, stats=stats))
    assert sum(len(c.due) for c in chunks) == 3
    assert stats.bad_count == 1 and stats.bad[0][0] == 3 and stats.bad[0][1].startswith("due: NaN")
