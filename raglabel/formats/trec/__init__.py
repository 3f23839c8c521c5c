"""TREC run and qrels files: every rule for reading them, ranking a run as trec_eval
does and aligning it to labels, in one place.

- :mod:`.shape`: whether a file is a run or qrels, from its first data line.
- :mod:`.order`: scores as trec_eval compares them (32-bit floats).
- :mod:`.rows`: the exact line reader, which names the line of any error, and the
  alignment of plain Python rows (samples, a project's small runs).
- :mod:`.columns` and :mod:`.arrays`: files of a few megabytes cut into numpy byte
  columns and aligned on them, without importing polars.
- :mod:`.frames`, :mod:`.ranking` and :mod:`.align`: larger files parsed by polars,
  ranked by moving only what must move, and aligned through 64-bit keys.
- :mod:`.blocks`: a large run cut into blocks of whole queries, so that memory stays
  flat.

This package imports nothing itself: the numpy path must not pay for polars.
"""
