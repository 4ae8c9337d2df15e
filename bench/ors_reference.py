"""The ORS reference server (openrewardstandard/python-sdk's `ors.Server`, as shipped) hosting the bench
environment: one row, a `noop` tool and a `submit` tool whose reward compares the answer with the row's
reference, as bench/units/environments/bench does on this server. For bench/doors-peers.ts.

  pip install --no-deps <python-sdk checkout>; pip install fastapi uvicorn structlog sse-starlette tenacity aiohttp
"""
from pydantic import BaseModel

from ors import Environment, Server, Split, TextBlock, ToolOutput, tool

TASKS = [{"id": "bench-0", "question": "q", "reference_answer": "42"}]


class NoopParams(BaseModel):
    q: str = ""


class SubmitParams(BaseModel):
    answer: str


class Bench(Environment):
    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {})

    @classmethod
    def list_splits(cls):
        return [Split(name="train", type="train")]

    @classmethod
    def list_tasks(cls, split: str):
        return TASKS

    def get_prompt(self):
        return [TextBlock(text=self.task_spec["question"])]

    @tool
    def noop(self, params: NoopParams) -> ToolOutput:
        """Does nothing."""
        return ToolOutput(blocks=[TextBlock(text="ok")])

    @tool
    def submit(self, params: SubmitParams) -> ToolOutput:
        """Ends the episode with an answer."""
        right = params.answer.strip() == self.task_spec["reference_answer"]
        return ToolOutput(blocks=[TextBlock(text="graded")], reward=1.0 if right else 0.0, finished=True)


app = Server([Bench]).app
