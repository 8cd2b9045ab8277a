"""Serving the app with uvicorn so that a stop signal reaches the admission gate at once.

uvicorn, on SIGTERM or SIGINT, stops accepting connections and waits for the ones it has
(up to its graceful-shutdown timeout), then runs the app's shutdown. A client that sent its
headers and half a body would hold that wait until the timeout, then get a 500. `Server`
also tells the app's admission gate (`limits.Admission.begin_stopping`) the moment the
signal arrives: bodies still being read are answered 503 and their connections closed, new
scoring requests are refused, and only the requests already admitted are waited for.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

import uvicorn


class Server(uvicorn.Server):
    """`uvicorn.Server` for a rewardsmith app (see the module docstring)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        admission: Any = getattr(getattr(self.config.app, "state", None), "admission", None)
        if admission is not None:
            admission.begin_stopping()
        super().handle_exit(sig, frame)
