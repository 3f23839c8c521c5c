"""Command-line interface. Heavy imports stay inside the commands that need them."""
