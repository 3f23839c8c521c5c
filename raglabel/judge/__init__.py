"""The LLM judge: prompts, reply parsing, an HTTP client and the run that drives it.

Nothing here imports Textual or opens the database; the CLI and the grading app hand
the runner its slots and a sink for what comes back.
"""
