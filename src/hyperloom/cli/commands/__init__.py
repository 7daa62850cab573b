"""One module per `hyperloom` subcommand; each exposes `register(subparsers)`."""
