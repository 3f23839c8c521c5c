"""Pure metric engine: numpy arrays in, numpy arrays out. No I/O and no UI here."""

from raglabel.metrics.config import GRADES, MetricConfig
from raglabel.metrics.evaluate import QueryStats, evaluate_run, evaluate_runs
from raglabel.metrics.labels import LabelSet, counts_from_grades
from raglabel.metrics.names import (
    ALL_METRICS,
    GROUPS,
    MetricKey,
    MetricNameError,
    parse_metric_list,
)
from raglabel.metrics.run import RankedRun
from raglabel.metrics.weights import rarity_weights, top_k_gain

__all__ = [
    "ALL_METRICS",
    "GRADES",
    "GROUPS",
    "LabelSet",
    "MetricConfig",
    "MetricKey",
    "MetricNameError",
    "QueryStats",
    "RankedRun",
    "counts_from_grades",
    "evaluate_run",
    "evaluate_runs",
    "parse_metric_list",
    "rarity_weights",
    "top_k_gain",
]
