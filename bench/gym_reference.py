"""The NeMo Gym reference server: a resources server built on NeMo Gym's own `SimpleResourcesServer` (as
resources_servers/example_single_tool_call does: FastAPI, its session middleware (the cookie),
RolloutContextMiddleware, `/seed_session`, `/verify` under judge_failsafe), hosting the bench environment: a
`noop` tool route and a verify comparing the last assistant message with the row's reference answer, as
bench/units/environments/bench does on this server. Nothing recorded. For bench/doors-peers.ts --door gym.

`run_webserver()` needs Gym's head server and global config (hydra); this builds the same app as it does (the
server's setup_webserver, then setup_liveness and setup_exception_middleware; uvicorn without access log)
from a config given here. Needs a Python with nemo_gym importable (NeMo Gym's source; see bench/README.md).
"""
from fastapi import FastAPI
from omegaconf import OmegaConf
from pydantic import BaseModel

from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseVerifyRequest,
    BaseVerifyResponse,
    SimpleResourcesServer,
)
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.server_utils import ServerClient


class NoopRequest(BaseModel):
    q: str = ""


class NoopResponse(BaseModel):
    output: str


class BenchVerifyRequest(BaseVerifyRequest):
    reference_answer: str


class BenchVerifyResponse(BenchVerifyRequest, BaseVerifyResponse):
    pass


def last_text(body: BaseVerifyRequest) -> str:
    for item in reversed(body.response.output):
        if getattr(item, "type", None) == "message" and getattr(item, "role", None) == "assistant":
            return "".join(getattr(c, "text", "") for c in item.content if getattr(c, "type", None) == "output_text")
    return ""


class BenchResourcesServer(SimpleResourcesServer):
    config: BaseResourcesServerConfig

    def setup_webserver(self) -> FastAPI:
        app = super().setup_webserver()
        app.post("/noop")(self.noop)
        return app

    async def noop(self, body: NoopRequest) -> NoopResponse:
        return NoopResponse(output="ok")

    async def verify(self, body: BenchVerifyRequest) -> BenchVerifyResponse:
        right = last_text(body).strip() == body.reference_answer.strip()
        return BenchVerifyResponse(**body.model_dump(), reward=1.0 if right else 0.0)


server = BenchResourcesServer(
    config=BaseResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="gym_reference.py", name="bench"),
    server_client=ServerClient(head_server_config=BaseServerConfig(host="127.0.0.1", port=0), global_config_dict=OmegaConf.create({})),
)
app = server.setup_webserver()
server.setup_liveness(app)
server.setup_exception_middleware(app)
