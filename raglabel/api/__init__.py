"""The Python API for notebooks: ``raglabel.evaluate`` over dicts, files or DataFrames,
with the conventions and the numbers of ``raglabel eval``."""
