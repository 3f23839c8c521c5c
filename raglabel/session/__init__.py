"""The grading session: what the app shows and does, with no Textual in it.

The Textual app (``raglabel.tui``) owns one :class:`~raglabel.session.grading.GradingSession` and
renders what it returns; everything here is plain Python, numpy and the storage layer,
so it is tested without a terminal and reused by benchmarks. The app reaches the project
file only through the session, which calls storage's functions and never writes SQL itself.
"""
