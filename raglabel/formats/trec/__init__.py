"""TREC run and qrels files: every rule for reading them, ranking a run as trec_eval
does and aligning it to labels, in one place.

The rule, once (:mod:`.order`): a run's entries go by score descending, compared as
trec_eval keeps scores (32-bit floats), ties by passage id descending as bytes, and a
(query, passage) pair met again counts once, at its best place. Queries go in id order.

How a run and labels come in:

- :mod:`.shape` tells a run from qrels by the first data line; :mod:`.canonical` says
  which files the quick strategies may parse (single spaces, nothing the exact reader
  would split differently). Every strategy reads a byte order mark at the start of a
  file as nothing, by one rule (:func:`raglabel.formats.lines.without_byte_order_mark`),
  as the JSON readers do.
- :func:`.arrays.read_run_table` and :func:`.arrays.read_qrels_table` are the reader's
  entries for inputs of a few megabytes. They return a :class:`.table.RunTable` (query
  ids, passage ids as UTF-8 bytes, scores) and a :class:`.table.QrelsTable` (query ids,
  passage ids, grades), by one of their strategies: numpy byte columns for a canonical
  file (:mod:`.columns`), else a bulk split of the lines, else the exact line reader
  (:mod:`.rows`), which names the line of any error. Tables from Python code (the API),
  samples, a small project's stored rankings and the agreement figures' rankings are
  the same types. An import stores the labels' table as it is.
- :class:`.arrays.ArrayAlignment` aligns any :class:`.table.RunTable` to labels: one
  alignment for all of them. Its 64-bit pair keys, the labels' index of them, the filter
  that rules out rows without a label and the repeat check by blocks are in
  :mod:`.keys`, which the polars aligner uses too.
- Large files take the polars strategy (:mod:`.frames`, :mod:`.align`, :mod:`.ranking`,
  :mod:`.large`), and a run past two blocks is read a block of whole queries at a time
  (:mod:`.blocks`) so that memory stays flat. It keeps its own frame and aligner
  because they are faster there: polars parses on several threads. Measured on a run
  of a million lines in one process (2026-11-28), the numpy strategy read in the same
  blocks and aligned by :class:`.arrays.ArrayAlignment` took about a sixth more CPU
  time than polars (0.81 s against 0.69 s): numpy cuts the lines on one thread, and
  that alone took longer than polars' parse (0.35-0.40 s against 0.27-0.35 s).
  Keeping polars' parse and turning each block into a :class:`.table.RunTable` for
  :class:`.arrays.ArrayAlignment` did not pay either (the same day, later): per block
  of 471,000 lines, 13-15 ms to copy the ids into fixed-width bytes, and 32.6 ms to
  align against the polars aligner's 28.4 (docs/benchmarks.md, "third pass").
  It follows :mod:`.order`, and gives the numbers the exact reader gives (the tests
  check every strategy against it on generated files). A large project's stored runs
  take it too.
- :mod:`.files` picks the small or the large strategy by the inputs' size (the report's
  ``reader``); :mod:`.ranked` puts a run in that order whole for a project to store.

This package imports nothing itself: the numpy path must not pay for polars.
"""
