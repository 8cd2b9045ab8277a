"""The server's end of a scoring worker's pipe, driven by the event loop whatever its kind.

A worker speaks `multiprocessing.connection` (blocking `send` / `recv` of pickled objects on
its own end). The server's end must never block the event loop, and must not depend on how
the loop treats the descriptor: uvloop's `add_reader` makes it non-blocking, after which
`Connection.send` of a job larger than the socket buffer, or `recv` of a reply still
arriving, raised `BlockingIOError` and the job was lost (its samples `error`, its worker
restarted). `AsyncPipe` sets the descriptor non-blocking itself and writes and reads the same
framing (a 4-byte big-endian length, or -1 and an 8-byte one, then the pickle) with
`EAGAIN` handled: it waits for the descriptor to be writable or readable and goes on, so a
message of any size goes through, on asyncio's loop or uvloop's.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import struct
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

# Bytes per read from the pipe: a socket buffer's worth. A larger read costs more than it
# saves: Python allocates the whole chunk for every read, and 1 MiB came from mmap with page
# faults (~25 us per reply read, against ~3 us for 64 KiB); a large reply takes a few reads.
READ_CHUNK = 1 << 16
_SHORT = struct.Struct("!i")
_LONG = struct.Struct("!Q")


class PipeClosed(Exception):
    """The worker's end is closed (it exited or was killed), or the pipe broke."""


class AsyncPipe:
    """Non-blocking `send` / `recv` of objects on the server's end of a worker's pipe."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.fd = conn.fileno()
        os.set_blocking(self.fd, False)
        self._inbox = bytearray()

    async def send(self, obj: Any) -> None:
        """Write one message, waiting for room in the pipe as often as needed."""
        data = ForkingPickler.dumps(obj)
        size = len(data)
        header = _SHORT.pack(size) if size <= 0x7FFFFFFF else _SHORT.pack(-1) + _LONG.pack(size)
        frame = bytearray(header)
        frame += data  # one copy of the pickle (a job carries the whole request body)
        view = memoryview(frame)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await self._until(writable=True)
                continue
            except OSError as exc:
                raise PipeClosed(f"cannot write to the worker ({exc.strerror})") from exc
            view = view[written:]

    async def recv(self) -> Any:
        """Read one message, waiting for its bytes as often as needed."""
        while True:
            body = self._take()
            if body is not None:
                return pickle.loads(body)
            try:
                chunk = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                await self._until(writable=False)
                continue
            except OSError as exc:
                raise PipeClosed(f"cannot read from the worker ({exc.strerror})") from exc
            if not chunk:
                raise PipeClosed("the worker closed its pipe")
            self._inbox += chunk

    def send_nowait(self, obj: Any) -> bool:
        """Write a small message if the pipe takes it whole now (a stop request); False if
        it did not (the caller kills the worker instead)."""
        data = ForkingPickler.dumps(obj)
        frame = _SHORT.pack(len(data)) + bytes(data)
        try:
            return os.write(self.fd, frame) == len(frame)
        except OSError:
            return False

    def close(self) -> None:
        self.conn.close()

    async def _until(self, writable: bool) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        if writable:
            loop.add_writer(self.fd, wake)
        else:
            loop.add_reader(self.fd, wake)
        try:
            await ready
        finally:
            if writable:
                loop.remove_writer(self.fd)
            else:
                loop.remove_reader(self.fd)

    def _take(self) -> bytes | None:
        """One whole message's pickle from the inbox, or None until it has all arrived."""
        box = self._inbox
        if len(box) < _SHORT.size:
            return None
        (size,) = _SHORT.unpack_from(box)
        start = _SHORT.size
        if size == -1:
            if len(box) < start + _LONG.size:
                return None
            (size,) = _LONG.unpack_from(box, start)
            start += _LONG.size
        if len(box) < start + size:
            return None
        body = bytes(box[start : start + size])
        del box[: start + size]
        return body
