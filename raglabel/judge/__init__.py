"""The LLM judge: its tasks (a prompt and a reply model each: passages, answer samples),
an HTTP client and the run that drives any task.

Nothing here imports Textual or opens the database; the CLI and the grading app hand
the runner its slots and a sink for what comes back.
"""
