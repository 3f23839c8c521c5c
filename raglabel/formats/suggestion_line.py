"""One line of ``raglabel export --jsonl F --suggestions``: a judge's suggestion for a
pair, never a human grade (``source`` is "judge", or "imported" for labels another judge
wrote that ``raglabel import --judgments`` brought in)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Grade = Annotated[int, Field(ge=1, le=5)]


class SuggestionLine(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query_id: str
    passage_id: str
    grade: Grade = Field(description="The lower median of the model's answers.")
    model: str
    source: Literal["judge", "imported"] = Field(
        default="judge",
        description='"judge": asked by raglabel judge; "imported": read from a file of labels.',
    )
    reason: str | None = Field(description="The model's reason for the median grade.")
    flagged: bool = Field(description="The passage should be checked by a person.")
    flag_reason: str | None = Field(
        description="Why: it addresses the grader, or is stuffed with the query's words."
    )
    low: Grade = Field(description="The lowest of the answers behind the suggestion.")
    high: Grade = Field(description="The highest of the answers behind the suggestion.")
    answers: int = Field(ge=1, description="How many answers (repeats) the median is over.")
    endpoint: str | None = Field(description="The chat-completions URL, without credentials.")
    prompt_version: str | None = Field(description="Names the exact prompt text used.")
    params: dict[str, Any] | None = Field(description="Request parameters, e.g. temperature.")
    created_at: str
    file_sha256: str | None = Field(
        default=None, description="The SHA-256 of the file an imported suggestion came from."
    )
