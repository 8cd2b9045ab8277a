"""Back-pressure: how many scoring requests the server takes at once, and what it answers
past that.

`AdmissionGate` is ASGI middleware in front of the scoring routes. It admits at most
`max_pending` requests at a time (running, or waiting for a scoring worker); the next one is
refused at once with 503 and `Retry-After`, before its body is read, so an overloaded server
spends nothing on it and no queue grows without bound. Before the workers are warm, and while
the server drains on shutdown, scoring requests get the same 503. The request body limit is
Starlette's `RequestBodyLimitMiddleware` (`FastAPI(max_body_size=...)`), which refuses with
413 as soon as the declared length, or the bytes read so far, pass the limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rewardsmith.server.metrics import Metrics

# Routes that score (and so take a worker); everything else is never refused for load.
SCORING_ROUTES = frozenset({"/v1/score", "/v1/openrlhf", "/v1/route"})


@dataclass
class Admission:
    """The count of admitted scoring requests and the server's phase."""

    max_pending: int
    retry_after: int
    pending: int = 0
    ready: bool = False
    stopping: bool = False


class AdmissionGate:
    """ASGI middleware; see the module docstring."""

    def __init__(self, app: Any, admission: Admission, metrics: Metrics) -> None:
        self.app = app
        self.admission = admission
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") not in SCORING_ROUTES:
            await self.app(scope, receive, send)
            return
        gate = self.admission
        if not gate.ready or gate.stopping:
            phase = "stopping" if gate.stopping else "starting"
            await self._refuse(send, phase, f"the server is {phase}; retry shortly")
            return
        if gate.pending >= gate.max_pending:
            message = (
                f"the server is full ({gate.max_pending} requests in progress); retry after "
                f"{gate.retry_after} s"
            )
            await self._refuse(send, "full", message)
            return
        gate.pending += 1
        try:
            await self.app(scope, receive, send)
        finally:
            gate.pending -= 1

    async def _refuse(self, send: Any, reason: str, message: str) -> None:
        self.metrics.rejected.labels(reason).inc()
        body = json.dumps({"error": message}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(self.admission.retry_after).encode()),
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})
