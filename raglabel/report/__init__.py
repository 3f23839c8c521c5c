"""``raglabel report``: one file, or a folder for a pull request, that says what changed.

The package renders what it is handed (:class:`~raglabel.report.model.ReportInput`); the
numbers come from ``eval`` and ``agree``, so a report never disagrees with them.
"""
