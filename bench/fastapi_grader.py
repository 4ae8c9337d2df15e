# The baseline of bench/grade-path.ts: the same comparison as bench/units/graders/reference_match.ts
# in FastAPI, as OpenAI's and Azure's sample grader servers are built (a pydantic request model,
# uvicorn), with no record. Run: python3 -m uvicorn --app-dir bench fastapi_grader:app --port N
from typing import Any, Optional

from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class Sample(BaseModel):
    output_text: Optional[str] = None


class GradeRequest(BaseModel):
    sample: Sample
    item: dict[str, Any] = {}
    trace_id: Optional[str] = None


@app.post("/graders/reference_match")
async def grade(req: GradeRequest) -> dict[str, float]:
    reference = str(req.item.get("reference_answer", "")).strip()
    return {"score": 1.0 if (req.sample.output_text or "").strip() == reference else 0.0}
