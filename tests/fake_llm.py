"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 for LLM client and router tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any]  # (HTTP status, JSON body or raw text)


def chat_body(content: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class FakeLLM:
    """Answers each POST with the next scripted reply (the last one repeats); `GET /v1/models`
    with `models` (a status and body; default 404, a server without the endpoint)."""

    def __init__(self, replies: list[Reply], models: Reply = (404, "not found")) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.gets: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.gets.append({"path": self.path, "headers": dict(self.headers)})
                status, body = models if self.path.endswith("/models") else (404, "not found")
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                fake.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(self.rfile.read(length)),
                    }
                )
                status, body = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@contextmanager
def fake_llm(replies: list[Reply], models: Reply = (404, "not found")) -> Iterator[FakeLLM]:
    fake = FakeLLM(replies, models)
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
