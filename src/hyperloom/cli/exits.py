"""The `hyperloom` command's exit codes."""

EXIT_OK, EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR = 0, 1, 2
