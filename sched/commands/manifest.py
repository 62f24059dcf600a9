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

    text = manifest.manifest_text(args.results)
    files.write_text(args.out, text)
    digest, count = manifest.sha256(args.out), text.count("\n")
    run_record.write(args.record, manifest=digest, artefacts=count)
    print(f"{args.out}: {count} result artefacts, sha256 {digest}")
    print(f"wrote {args.out} and the run record {args.record}", file=sys.stderr)


def run_compare(args):
    from sched.evidence import manifest

    diffs = manifest.compare(args.a, args.b)
    n = len(manifest.read(args.a))
    if not diffs:
        print(f"identical: {n} result artefacts, sha256 {manifest.digest(args.a)}")
        return
    first = diffs[0]
    print(f"first difference (DAG order): {first.path} ({first.how})")
    for d in diffs[1:]:
        print(f"  then: {d.path} ({d.how})")
    print(f"{len(diffs)} of {n} artefacts differ")
    raise SystemExit(1)
