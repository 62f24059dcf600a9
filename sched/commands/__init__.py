"""One module per `sched` subcommand: `register(subparsers)` adds it, `run(args)` runs it."""


def add_policy_inputs(parser, tuned_help, policy_file_help):
    """``--tuned`` and ``--policy-file``, the options naming the policies' inputs (one definition)."""
    from sched import layout

    parser.add_argument("--tuned", default=layout.TUNED_PATH, help=f"{tuned_help} (default: %(default)s)")
    parser.add_argument(
        "--policy-file",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help=f"{policy_file_help}; repeatable",
    )
