# The baseline of bench/reward-c1.ts: a bare reward server as slime's remote_rm expects one (its request
# {"prompt", "response", "label"}, the score as a JSON number), FastAPI + uvicorn, with the same trivial
# comparison as bench/units/graders/reference_match.ts (the response is the label) and no record.
# Run: python -m uvicorn --app-dir bench fastapi_reward:app --port N
from typing import Any, Optional

from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class RewardRequest(BaseModel):
    prompt: Any = None
    response: str
    label: Optional[Any] = None


@app.post("/reward")
async def reward(req: RewardRequest) -> float:
    return 1.0 if req.response.strip() == str(req.label if req.label is not None else "").strip() else 0.0
