"""One module per `hyperloom` subcommand; each exposes `configure(parser)`, which
hyperloom.cli.main calls only for the command that runs."""
