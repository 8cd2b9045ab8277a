"""Worker entries for test_process.py: each `config["mode"]` is one worker behaviour, run in
a `WorkerProcess` (tests put this folder on the worker's PYTHONPATH)."""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Any

from rewardsmith.sandbox.process import recv, send


class WritesAFile:
    """Unpickling this creates `path`: proof that the reader ran code the worker chose."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _raw(fd: int, body: bytes, length: int | None = None) -> None:
    os.write(fd, (len(body) if length is None else length).to_bytes(8, "big") + body)


def main(in_fd: int, out_fd: int, config: dict[str, Any]) -> None:
    mode = config["mode"]
    if mode == "echo":  # every message back, until end of file
        while (message := recv(in_fd)) is not None:
            send(out_fd, {"echo": message, "pid": os.getpid()})
    elif mode == "noisy":  # libraries that print must not corrupt the framing
        print("a library printing to stdout", flush=True)
        os.write(1, b"\x00\x00\x00\x00\x00\x00\x00\x09garbage!!")
        send(out_fd, "after the noise")
        recv(in_fd)
    elif mode == "huge_header":  # claims a terabyte, sends nothing
        _raw(out_fd, b"", length=1 << 40)
        recv(in_fd)
    elif mode == "not_json":
        _raw(out_fd, b"{not json")
        recv(in_fd)
    elif mode == "pickle":
        _raw(out_fd, pickle.dumps(WritesAFile(config["path"])))
        recv(in_fd)
    elif mode == "deaf":  # never reads its input
        time.sleep(60)
    elif mode == "silent":  # reads, never answers
        recv(in_fd)
    sys.exit(0)
