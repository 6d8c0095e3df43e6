"""One module per `orchestrate` subcommand; each exposes `register(subparsers)`."""
