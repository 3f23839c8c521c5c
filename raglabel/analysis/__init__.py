"""Evaluation and agreement as reports: where the labels and runs come from
(:mod:`~raglabel.analysis.sources`), what a request asks for
(:mod:`~raglabel.analysis.inputs`), means, intervals and paired tests
(:mod:`~raglabel.analysis.evaluation`) and the ``agree`` report
(:mod:`~raglabel.analysis.agreement`). Storage, formats and metrics below it; no
argparse, no terminal above it.
"""
