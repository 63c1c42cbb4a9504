"""Evaluation layer: answer matching, the paper's metrics, resumable results, the run
loop and seed-aggregated tables. Method-agnostic.

The tables live in :mod:`lokg.eval.tables` (also a command: ``python -m lokg.eval.tables
RUNS_DIR``); they are not imported here so that running that command does not import the
module twice."""

from lokg.eval.metrics import (
    METRIC_KEYS,
    KGQAMetrics,
    QuestionScore,
    aggregate,
    score_question,
    set_scores,
)
from lokg.eval.results import QuestionResult, ResultsWriter, read_results
from lokg.eval.runner import failed_result, run_questions
from lokg.normalize import (
    answers_match,
    normalize_answer,
    normalize_set,
    text_contains_answer,
)

__all__ = [
    "METRIC_KEYS",
    "KGQAMetrics",
    "QuestionResult",
    "QuestionScore",
    "ResultsWriter",
    "aggregate",
    "answers_match",
    "failed_result",
    "normalize_answer",
    "normalize_set",
    "read_results",
    "run_questions",
    "score_question",
    "set_scores",
    "text_contains_answer",
]
