"""`sched manifest`: write the results' manifest, or compare two (issue 45)."""

import sys

from sched import layout


def register(sub):
    s = sub.add_parser(
        "manifest",
        help="write results/manifest.sha256 (every result artefact, run records excluded), or compare two",
    )
    v = s.add_subparsers(dest="action", required=True, metavar="ACTION")
    w = v.add_parser("write", help="hash every result artefact under a results folder, in DAG order")
    w.add_argument("--results", default=layout.RESULTS, help="the results folder (default: %(default)s)")
    w.add_argument("--out", default=layout.MANIFEST, help="the manifest (default: %(default)s)")
    w.add_argument(
        "--record",
        default=layout.RUN_RECORD,
        help="the run record: versions, processor, pins, host (default: %(default)s)",
    )
    w.set_defaults(func=run_write)
    c = v.add_parser(
        "compare",
        help="name the first artefact (in DAG order) on which two manifests differ; exit 1 when any does",
    )
    c.add_argument("a", metavar="A", help="a manifest (yours)")
    c.add_argument("b", metavar="B", help="another (the published one, say)")
    c.set_defaults(func=run_compare)


def run_write(args):
    from sched import files
    from sched.evidence import manifest, run_record

    # both targets checked before anything is hashed or written: a link is not written through,
    # a file of another format not written over
    manifest.check_out(args.out)
    _check_record(args.record)
    data = manifest.encode(manifest.manifest_text(args.results))
    with files.atomic_path(args.out) as tmp:
        tmp.write_bytes(data)
    digest, count = manifest.sha256(args.out), data.count(b"\n")
    run_record.write(args.record, manifest=digest, artefacts=count)
    out = manifest.shown(args.out)
    print(f"{out}: {count} result artefacts, sha256 {digest}")
    print(f"wrote {out} and the run record {manifest.shown(args.record)}", file=sys.stderr)


#: Keys every run record has (sched.evidence.run_record.record): its signature.
RECORD_KEYS = ("written", "host", "versions")


def _check_record(path):
    """Refuse ``path`` as the run record to write when it is a symbolic link, or an existing
    file that is not a run record (a JSON object with :data:`RECORD_KEYS`)."""
    import os

    from sched import files
    from sched.evidence.manifest import ManifestError, shown
    from sched.formats import json_input

    if os.path.islink(path):
        raise ManifestError(f"{shown(path)}: a symbolic link; the run record is not written through a link")
    if not os.path.lexists(path):
        return
    data = files.read_bytes(path, ManifestError, 64 << 20)
    if not data:
        return
    try:
        doc = json_input.parse(data, shown(path), ManifestError)
    except ManifestError as exc:
        doc = str(exc)
    if not (isinstance(doc, dict) and all(k in doc for k in RECORD_KEYS)):
        why = doc if isinstance(doc, str) else f"no {', '.join(RECORD_KEYS)} fields"
        raise ManifestError(
            f"{shown(path)}: exists and is not a run record ({why}); not written over "
            "(remove it, or choose another --record)"
        )


def run_compare(args):
    from sched.evidence import manifest

    diffs = manifest.compare(args.a, args.b)
    n = len(manifest.read(args.a))
    if not diffs:
        print(f"identical: {n} result artefacts, sha256 {manifest.digest(args.a)}")
        return
    first = diffs[0]
    print(f"first difference (DAG order): {manifest.shown(first.path)} ({first.how})")
    for d in diffs[1:]:
        print(f"  then: {manifest.shown(d.path)} ({d.how})")
    print(f"{len(diffs)} of {n} artefacts differ")
    raise SystemExit(1)
