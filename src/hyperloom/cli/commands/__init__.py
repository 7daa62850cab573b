"""The commands that need more than a plain tool run: the ones that are no tool (listed in hyperloom.cli.extras,
each module with `configure(parser)`), and the handlers and options a catalog entry names for its tool."""
