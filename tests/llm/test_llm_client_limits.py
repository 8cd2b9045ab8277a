"""An LLM endpoint that misbehaves cannot hold a call or fill memory: one total deadline
per call (not per read), a cap on the answer's size, clear errors for answers that are not
usable JSON."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from fake_llm import chat_body
from rewardsmith.errors import LLMError
from rewardsmith.llm import client as client_mod
from rewardsmith.llm.client import LLMClient

MESSAGES = [{"role": "user", "content": "hi"}]
Send = Callable[[socket.socket], None]


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "BACKOFF_S", 0.01)


@contextmanager
def raw_server(send: Send) -> Iterator[str]:
    """An endpoint that reads each request's head and answers with `send(conn)`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=_answer, args=(conn, send), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join()
        listener.close()


def _answer(conn: socket.socket, send: Send) -> None:
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            ),
            0,
        )
        while len(rest) < length:
            rest += conn.recv(65536)
        with contextlib.suppress(OSError):  # the client hung up: what these tests want
            send(conn)


def _drip(seconds: float) -> Send:
    """A valid answer, one byte at a time, spread over `seconds`."""
    body = json.dumps(chat_body("dripped")).encode()

    def send(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        for byte in body:
            conn.sendall(bytes([byte]))
            time.sleep(seconds / len(body))

    return send


def _chunked(total: int) -> Send:
    """`total` bytes of answer in chunked encoding (no length declared up front)."""

    def send(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        block = b"x" * 65536
        for _ in range(total // len(block)):
            conn.sendall(b"%x\r\n" % len(block) + block + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    return send


def _declared(length: int) -> Send:
    def send(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n".encode() + b"{")

    return send


def test_a_drip_fed_answer_ends_at_the_total_deadline_not_per_read() -> None:
    # every byte arrives well within a read timeout, the whole answer takes 30 s
    with raw_server(_drip(30.0)) as url, pytest.raises(LLMError, match="within 1 s"):
        LLMClient(url, "m", timeout=1.0, retries=2).chat(MESSAGES)


def test_an_answer_in_time_is_read_whole() -> None:
    with raw_server(_drip(0.2)) as url:
        assert LLMClient(url, "m", timeout=30.0).chat(MESSAGES).text == "dripped"


# Oversized answers are refused as they arrive, never read whole.
OVERSIZED = [
    pytest.param(_chunked(5_000_000), id="streamed-without-a-length"),
    pytest.param(_declared(300_000_000), id="declared-300MB"),
]


@pytest.mark.parametrize("send", OVERSIZED)
def test_an_answer_over_the_size_cap_is_refused(send: Send) -> None:
    with raw_server(send) as url, pytest.raises(LLMError, match="larger than 100,000 bytes"):
        LLMClient(url, "m", max_answer_bytes=100_000).chat(MESSAGES)


# Bodies that parse to nothing usable: each is an LLMError, never a traceback.
UNUSABLE = [
    pytest.param("[" * 200_000 + "]" * 200_000, "not JSON", id="nested-past-the-parser"),
    pytest.param("[1, 2]", "not a JSON object", id="an-array"),
    pytest.param(
        {"choices": [{"message": {"content": {"a": 1}}}]}, "not a string", id="content-object"
    ),
]


@pytest.mark.parametrize(("body", "message"), UNUSABLE)
def test_unusable_answers_are_llm_errors(body: object, message: str) -> None:
    from fake_llm import fake_llm

    with fake_llm([(200, body)]) as fake, pytest.raises(LLMError, match=message):
        LLMClient(fake.url, "m").chat(MESSAGES)


def test_odd_usage_fields_count_as_no_usage() -> None:
    from fake_llm import fake_llm

    body = chat_body("ok")
    body["usage"] = {"prompt_tokens": "many", "completion_tokens": -3}
    with fake_llm([(200, body)]) as fake:
        result = LLMClient(fake.url, "m").chat(MESSAGES)
    assert result.text == "ok" and result.prompt_tokens == 0 and result.completion_tokens == 0
