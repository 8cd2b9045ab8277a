"""Worker processes: a fresh interpreter started from a bootstrap, spoken to in framed JSON.

The sandbox's zygotes (`pool.py` starts them, `worker.py` runs in them) and the verifier
pools of reward tools (`rewardsmith.tools.verifier_pool`, used by the `math` tool) run their
work in processes started here, and speak one framing both ways:

- A message is an 8-byte big-endian length, then that many bytes of UTF-8 JSON. Never
  pickle: unpickling runs code the sender chose, so a worker that hostile input took over
  (a parser bug, a sandbox escape) could take over the process reading it. A reader also
  caps the length it accepts, so a broken or hostile sender cannot make it allocate
  gigabytes; a message over the cap, cut short or not JSON breaks the framing.
- `send` and `recv` are the blocking calls a worker uses on its own ends. `recv` reads
  exactly one message and never past it, so several processes can take turns reading one
  pipe (the sandbox's prepared children read their jobs straight from the caller's pipe).
- `WorkerProcess` is the caller's end of one worker. It starts `python -c BOOTSTRAP`: a
  fresh interpreter, not `multiprocessing` ("spawn" and "forkserver" re-import the caller's
  `__main__`, which in a training script without a `__main__` guard starts training again
  in every worker; "fork" is unsafe in a process with threads). The bootstrap moves the
  pipes off stdin/stdout at once (a stray print lands in /dev/null, never inside a
  message), registers the rewardsmith packages the entry needs as bare namespaces (so
  `rewardsmith/__init__.py`, the library and the router are not imported, and the worker
  runs this copy of rewardsmith whatever the caller's `sys.path` says), and calls
  `ENTRY.main(in_fd, out_fd, config)`. Sends and reads take deadlines (`select`, so they
  work from any thread); `alive`, `hang_up` and `kill` (which reaps and closes the pipes)
  end it.

Fork safety: a forked copy of the caller (a DataLoader worker, a trainer's subprocess) must
not talk over its parent's pipes, where its messages would interleave with the parent's. A
`WorkerProcess` refuses to send or read in any process but the one that started it
(`WorkerLost`), and `kill` there only closes that process's copies of the descriptors.

This module imports nothing else from rewardsmith: the sandbox is the bottom layer.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HEADER_BYTES = 8
# Bytes per read: a pipe holds 64 KiB, so one read usually takes all that is there.
READ_CHUNK = 1 << 16
# What a reader accepts unless told otherwise; replies that may be larger (the sandbox's
# captured output) pass their own cap, derived from the run's limits.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
# How long `kill` waits for the killed process to be reaped.
REAP_SECONDS = 5.0

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


class FrameError(Exception):
    """A message that breaks the framing: longer than the reader accepts, or not JSON."""


class WorkerLost(Exception):
    """A worker that cannot be spoken to: it exited or closed its pipe, broke the framing,
    or belongs to the process this one was forked from."""


def encode(message: Any) -> bytes:
    """One framed message: the JSON's length, then the JSON."""
    data = json.dumps(message, separators=(",", ":")).encode()
    return len(data).to_bytes(HEADER_BYTES, "big") + data


def decode_body(body: bytes) -> Any:
    """The message in one frame's body; raises `FrameError` when it is not JSON."""
    try:
        return json.loads(body)
    except ValueError as exc:
        raise FrameError(f"a message that is not JSON: {exc}") from exc


def send(fd: int, message: Any) -> None:
    """Write one message to a blocking descriptor (a worker's own end of a pipe)."""
    view = memoryview(encode(message))
    while view:
        view = view[os.write(fd, view) :]


def recv(fd: int, max_bytes: int | None = None) -> Any:
    """Read exactly one message from a blocking descriptor, never past it.

    Returns None at end of file, also when the sender went away in the middle of a message
    (so senders never send a bare `null`).
    Raises `FrameError` for a message longer than `max_bytes` (None: no cap, for a pipe
    whose sender is trusted) or one that is not JSON.
    """
    header = _read_exact(fd, HEADER_BYTES)
    if header is None:
        return None
    size = int.from_bytes(header, "big")
    if max_bytes is not None and size > max_bytes:
        raise FrameError(f"a message of {size} bytes, more than the {max_bytes} accepted")
    body = _read_exact(fd, size)
    return None if body is None else decode_body(body)


def read_frame(fd: int) -> bytes | None:
    """One framed message as it travelled (header and body), undecoded; None at end of
    file. For a process that passes a message on without reading it (the zygote, a job)."""
    header = _read_exact(fd, HEADER_BYTES)
    if header is None:
        return None
    body = _read_exact(fd, int.from_bytes(header, "big"))
    return None if body is None else header + body


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to a blocking descriptor."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def bootstrap(entry: str) -> str:
    """The program a worker runs: pipes off 0/1, bare rewardsmith packages, `entry.main`.

    Registered: `rewardsmith`, this package (every worker speaks its framing) and, for an
    entry inside rewardsmith, the packages on its path."""
    parts = entry.split(".")
    packages = {"rewardsmith", __name__.rsplit(".", 1)[0]}
    if parts[0] == "rewardsmith":
        packages.update(".".join(parts[:depth]) for depth in range(1, len(parts)))
    registered = [
        (name, str(_PACKAGE_DIR.joinpath(*name.split(".")[1:]))) for name in sorted(packages)
    ]
    return f"""
import json, os, sys, types
in_fd, out_fd = os.dup(0), os.dup(1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
os.close(null)
for name, path in {registered!r}:
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from {entry} import main
main(in_fd, out_fd, json.loads(sys.argv[1]))
"""


class WorkerProcess:
    """The caller's end of one worker process; see the module docstring.

    `entry` names a module (a rewardsmith one, or one on the worker's `sys.path`) whose
    `main(in_fd, out_fd, config)` the worker runs;
    `config` (JSON) is its argument. `env` None inherits the caller's environment;
    `python_args` go before `-c` (the sandbox passes `-s`: no user site-packages);
    `new_session` puts the worker in a session (and process group) of its own; `stderr`
    None shares the caller's. `max_message_bytes` caps what `receive` accepts by default.
    Messages to the worker are queued and written without blocking (`send`, `flush`), so a
    busy worker with a full pipe never blocks the caller past its deadline.
    """

    def __init__(
        self,
        entry: str,
        config: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        python_args: Sequence[str] = (),
        new_session: bool = False,
        stderr: int | None = subprocess.DEVNULL,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.max_message_bytes = max_message_bytes
        self._owner = os.getpid()
        self.process = subprocess.Popen(
            [sys.executable, *python_args, "-c", bootstrap(entry), json.dumps(dict(config))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=None if env is None else dict(env),
            cwd=cwd,
            close_fds=True,
            start_new_session=new_session,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.pid = self.process.pid
        self._write_fd = self.process.stdin.fileno()
        self._read_fd = self.process.stdout.fileno()
        os.set_blocking(self._write_fd, False)
        self._outbox = bytearray()
        self._inbox = bytearray()
        self._at_eof = False

    # -- to the worker ----------------------------------------------------------------------

    def send(self, message: Any) -> None:
        """Queue `message` and write what the pipe takes now, without blocking.

        Raises `WorkerLost` when the worker closed its end (or is not ours)."""
        self._check_owner()
        self._outbox += encode(message)
        self._write_some()

    def flush(self, deadline: float) -> bool:
        """Write queued messages until none is left (True) or `deadline` passes (False)."""
        self._check_owner()
        while True:
            self._write_some()
            if not self._outbox:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            select.select([], [self._write_fd], [], remaining)

    @property
    def sending(self) -> bool:
        """Whether queued bytes wait for room in the pipe (select on `write_fileno`)."""
        return bool(self._outbox)

    def write_fileno(self) -> int:
        return self._write_fd

    def _write_some(self) -> None:
        while self._outbox:
            try:
                written = os.write(self._write_fd, self._outbox)
            except BlockingIOError:
                return
            except OSError as exc:  # EPIPE: it exited; EBADF: we hung up
                raise WorkerLost(f"the worker's pipe is closed ({exc.strerror})") from exc
            del self._outbox[:written]

    # -- from the worker --------------------------------------------------------------------

    def fileno(self) -> int:
        """The descriptor to select on for messages from the worker."""
        return self._read_fd

    def receive(self, deadline: float, max_bytes: int | None = None) -> Any:
        """The next message, waiting until `deadline` (`time.monotonic()`).

        Raises `TimeoutError` when none is complete by then, `WorkerLost` when the worker
        closed its pipe or broke the framing (`max_bytes` caps the message's length)."""
        self._check_owner()
        cap = self.max_message_bytes if max_bytes is None else max_bytes
        while True:
            found, message = self._take(cap)
            if found:
                return message
            if self._at_eof:
                raise WorkerLost("the worker closed its pipe")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._read_fd], [], [], remaining)[0]:
                raise TimeoutError("no message from the worker in time")
            self._fill()

    def receive_ready(self) -> list[Any]:
        """Every message that is complete now, without waiting (after `select` said the
        descriptor is readable). Messages that arrived before an end of file come first;
        the call after them raises `WorkerLost`."""
        self._check_owner()
        if not self._at_eof and select.select([self._read_fd], [], [], 0)[0]:
            self._fill()
        messages = []
        while True:
            found, message = self._take(self.max_message_bytes)
            if not found:
                break
            messages.append(message)
        if not messages and self._at_eof:
            raise WorkerLost("the worker closed its pipe")
        return messages

    def _fill(self) -> None:
        try:
            chunk = os.read(self._read_fd, READ_CHUNK)
        except OSError as exc:
            raise WorkerLost(f"cannot read from the worker ({exc.strerror})") from exc
        if chunk:
            self._inbox += chunk
        else:
            self._at_eof = True

    def _take(self, max_bytes: int) -> tuple[bool, Any]:
        """(True, message) when a whole message is buffered, else (False, None)."""
        if len(self._inbox) < HEADER_BYTES:
            return False, None
        size = int.from_bytes(self._inbox[:HEADER_BYTES], "big")
        if size > max_bytes:
            raise WorkerLost(f"the worker sent {size} bytes, more than the {max_bytes} accepted")
        end = HEADER_BYTES + size
        if len(self._inbox) < end:
            return False, None
        body = bytes(self._inbox[HEADER_BYTES:end])
        del self._inbox[:end]
        try:
            return True, decode_body(body)
        except FrameError as exc:
            raise WorkerLost(f"the worker broke the framing: {exc}") from exc

    # -- its life -----------------------------------------------------------------------------

    @property
    def started_here(self) -> bool:
        """Whether this process started the worker (False in a forked copy of the caller)."""
        return os.getpid() == self._owner

    @property
    def returncode(self) -> int | None:
        """The exit status once it has ended (negative: the signal that ended it)."""
        return self.process.poll()

    def alive(self) -> bool:
        return self.process.poll() is None

    def hang_up(self) -> None:
        """Close our end of its input: an idle worker sees end of file and exits."""
        with contextlib.suppress(Exception):
            self.process.stdin.close()  # type: ignore[union-attr]

    def kill(self, grace: float = 0.0) -> None:
        """Let it exit by itself for `grace` seconds, then kill it; reap it, close the pipes.

        In a forked copy of the caller this only closes that copy's descriptors."""
        if self.started_here:
            with contextlib.suppress(subprocess.TimeoutExpired):
                if grace > 0:
                    self.process.wait(timeout=grace)
            with contextlib.suppress(OSError):
                self.process.kill()
            with contextlib.suppress(Exception):
                self.process.wait(timeout=REAP_SECONDS)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]

    def _check_owner(self) -> None:
        if not self.started_here:
            raise WorkerLost("the worker belongs to the process this one was forked from")
