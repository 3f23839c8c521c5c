"""raglabel: grade passages, measure retrieval."""

__version__ = "0.1.0"
