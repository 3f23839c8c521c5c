"""The project database: one SQLite file per labeling project, written through sqlite-utils."""
