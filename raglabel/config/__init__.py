"""The files a user writes to set raglabel up: TOML read with line numbers
(:mod:`~raglabel.config.toml_file`), metric config files (``--config``), and the key
file that remaps the grading app's bindings. Each error names the file and the line.
"""
