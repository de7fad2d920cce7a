"""Failure classes (AGS §14): what went wrong with an attempt, as ``retry_on`` names it."""

from __future__ import annotations

import enum


class FailureClass(enum.StrEnum):
    """AGS §14 failure classes; ``retry_on`` matches on these."""

    TRANSIENT = "transient"  # network blips, rate limits: worth retrying as is
    MODEL_ERROR = "model_error"  # the model answered nonsense or refused
    TOOL_ERROR = "tool_error"  # a tool failed in a way the model could not recover from
    TIMEOUT = "timeout"  # wall clock or step limit reached
    BUDGET_EXCEEDED = "budget_exceeded"  # a token/cost/tool-call limit would be passed
    CRITERIA_FAILED = "criteria_failed"  # the harness's checks said no
    OUTPUT_MISSING = "output_missing"  # a required output was not produced (RT033)
    VALIDATION_ERROR = "validation_error"  # an output failed its type or schema (RT031/RT032)
    PERMISSION_DENIED = "permission_denied"  # outside the effective permissions or tier
