"""Back-pressure: how many scoring requests the server takes at once, what it answers past
that, and how long a client may take to send a body.

`AdmissionGate` is ASGI middleware in front of the scoring routes. It first reads the whole
body, within `body_timeout` seconds for all of it (408 otherwise) and at most
`max_body_bytes` (413, refused from `Content-Length` before anything is read, or as soon as
the bytes read pass the limit; either way the connection is closed). Only a request whose
body has arrived is *admitted*: at most `max_pending` at a time (running, or waiting for a
scoring worker); the next is refused at once with 503 and `Retry-After`. So clients that send
their bodies slowly (a slow-loris) hold no admission slot: they wait for their own bodies
and are cut off at the body timeout, while complete requests are admitted. Bodies still being
read are bounded too (`max_reading`, 503 past it), so memory stays bounded by
(`max_pending` + `max_reading`) x `max_body_bytes`.

Before the workers are warm, and from the moment the server is told to stop
(`Admission.begin_stopping`, called from the SIGTERM handler: `serving.Server`), scoring
requests get 503; bodies still being read are answered 503 at once (the connection closed),
so a half-sent body never holds the shutdown, and the requests already admitted finish.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.server.metrics import Metrics

# Routes that score (and so take a worker); everything else is never refused for load.
SCORING_ROUTES = frozenset({"/v1/score", "/v1/openrlhf", "/v1/route"})


@dataclass
class Admission:
    """The counts of admitted requests and of bodies being read, and the server's phase."""

    max_pending: int
    retry_after: int
    body_timeout: float = 30.0
    max_body_bytes: int = 32 * 1024 * 1024
    max_reading: int = 256
    pending: int = 0
    reading: int = 0
    ready: bool = False
    stopping: bool = False
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    # The body timeouts of the requests being read: a stop ends them all at once.
    _windows: set[asyncio.Timeout] = field(default_factory=set, repr=False)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop that serves (set at startup): `begin_stopping` wakes it."""
        self._loop = loop

    def begin_stopping(self) -> None:
        """Refuse new scoring requests and cut off bodies being read. Safe to call from a
        signal handler or another thread."""
        self.stopping = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._end_windows)

    def watch(self, window: asyncio.Timeout) -> None:
        """End `window` (the timeout of a body being read) at once when the server stops,
        now or later (until `unwatch`). Call on the serving loop."""
        self._windows.add(window)
        if self.stopping:  # the stop came before the window was there to end
            window.reschedule(asyncio.get_running_loop().time())

    def unwatch(self, window: asyncio.Timeout) -> None:
        self._windows.discard(window)

    def _end_windows(self) -> None:
        assert self._loop is not None
        for window in list(self._windows):
            if not window.expired():  # one timing out already answers 503 (stopping) too
                window.reschedule(self._loop.time())


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
            await self._refuse(send, 503, phase, f"the server is {phase}; retry shortly")
            return
        if _declared_length(scope) > gate.max_body_bytes:
            await self._refuse(send, 413, "body", _too_large(gate.max_body_bytes))
            return
        if gate.reading >= gate.max_reading:
            message = (
                f"{gate.max_reading} requests are still sending their bodies; retry after "
                f"{gate.retry_after} s"
            )
            await self._refuse(send, 503, "reading", message)
            return
        gate.reading += 1
        self.metrics.reading.inc()
        try:
            body = await self._read_body(receive)
        finally:
            gate.reading -= 1
            self.metrics.reading.dec()
        if body is None:  # the client went away
            return
        if isinstance(body, _Refusal):
            await self._refuse(send, *body.args)
            return
        if gate.stopping:
            await self._refuse(send, 503, "stopping", "the server is stopping; retry shortly")
            return
        if gate.pending >= gate.max_pending:
            message = (
                f"the server is full ({gate.max_pending} requests in progress); retry after "
                f"{gate.retry_after} s"
            )
            await self._refuse(send, 503, "full", message)
            return
        gate.pending += 1
        try:
            await self.app(scope, _replay(body, receive), send)
        finally:
            gate.pending -= 1

    async def _read_body(self, receive: Any) -> bytes | _Refusal | None:
        """The whole body; a refusal (timeout, too large, stopping); None on disconnect."""
        gate = self.admission
        parts: list[bytes] = []
        size = 0
        try:
            # One timer for the whole body, ended early by a stop (`Admission._end_windows`):
            # no task per chunk (this runs for every scoring request).
            async with asyncio.timeout(gate.body_timeout) as window:
                gate.watch(window)
                try:
                    while True:
                        message = await receive()
                        if message["type"] == "http.disconnect":
                            return None
                        chunk = message.get("body", b"")
                        size += len(chunk)
                        if size > gate.max_body_bytes:
                            return _Refusal(413, "body", _too_large(gate.max_body_bytes))
                        parts.append(chunk)
                        if not message.get("more_body", False):
                            return b"".join(parts)
                finally:
                    gate.unwatch(window)
        except TimeoutError:
            if not window.expired():  # not this body's timeout: nothing to answer for
                raise
            if gate.stopping:
                return _Refusal(503, "stopping", "the server is stopping; retry shortly")
            message = (
                f"the request body did not arrive within {gate.body_timeout:g} s; send "
                "it at once, or raise the server's --body-timeout"
            )
            return _Refusal(408, "body_timeout", message)

    async def _refuse(self, send: Any, status: int, reason: str, message: str) -> None:
        self.metrics.rejected.labels(reason).inc()
        body = json.dumps({"error": message}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if status == 503:
            headers.append((b"retry-after", str(self.admission.retry_after).encode()))
        if status != 503 or reason == "stopping":
            # The rest of the body is not read: this connection cannot carry another request.
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _Refusal:
    """Why a body was not read: (status, metrics reason, message)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.args = (status, reason, message)


def _too_large(limit: int) -> str:
    return f"request body over the limit of {limit} bytes"


def _declared_length(scope: dict[str, Any]) -> int:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def _replay(body: bytes, receive: Any) -> Any:
    """A `receive` that hands the app the body read already, then the real stream's
    messages (a disconnect)."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replayed
