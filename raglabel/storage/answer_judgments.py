"""Names that code outside the judge's modules still imports from here: answer
judgments are kept by the one judgment store, :mod:`raglabel.storage.judgments`.

Kept only until those importers (``session/answers.py``, ``benchmarks/answer_eval.py``)
import from the store itself; nothing is defined here.
"""

from __future__ import annotations

from raglabel.storage.judgments import JudgedAnswer, answer_text_key, judged_answers
from raglabel.storage.judgments import JudgmentLog as AnswerJudgmentLog

__all__ = ["AnswerJudgmentLog", "JudgedAnswer", "answer_text_key", "judged_answers"]
