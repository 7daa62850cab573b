"""Plain-text reports of tool results for people, one module per tool family; `--json` prints the models instead.

A catalog entry names its renderer as 'hyperloom.cli.render.<family>:<function>', imported only when its command runs."""
