"""The project database, one SQLite file per labeling project, and the only package that
writes SQL or knows how rows are laid out (a ranking's encoding lives in ``runs`` alone):
queries, passages, runs and the candidate pool, the grade log and the labels resolved from
it, adjudication, judge answers and suggestions, import, export and the demo project. It
offers typed functions over ``Project`` and its connection; the layers above never see SQL.

Everything is plain sqlite3; a migration's script runs statement by statement inside the
upgrade's one transaction (``schema.script_statements``).
"""
