"""One module per `sched` subcommand: `register(subparsers)` adds it, `run(args)` runs it."""
