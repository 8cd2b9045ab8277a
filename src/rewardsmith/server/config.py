"""The server's settings (what `rewardsmith serve` options set)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from rewardsmith.errors import ConfigError

TOKEN_ENV = "REWARDSMITH_TOKEN"

# A request body larger than this is refused (413) while it is read, before it is buffered.
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
# Samples in one request; larger batches get 413 (split them: the client does).
DEFAULT_MAX_BATCH = 10_000
# Scoring requests admitted at once (running or waiting for a worker); past that, 503.
DEFAULT_MAX_PENDING = 64
# A request's rewards are due this many seconds after it is admitted; samples not scored
# by then come back `timeout`.
DEFAULT_DEADLINE_SECONDS = 60.0
# Seconds a client is told to wait (Retry-After) when the server is full or starting.
RETRY_AFTER_SECONDS = 1
# A request body must have arrived whole this many seconds after its headers (else 408): a
# client that sends slowly holds a connection, never an admission slot, and not for long.
DEFAULT_BODY_TIMEOUT_SECONDS = 30.0
# Bodies being read at once, per admission slot (`max_reading`).
READING_PER_SLOT = 4


def default_workers() -> int:
    """One scoring worker per usable CPU, at least 2 (a hung sample must not stall a pool
    of one), at most 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(2, min(8, cpus))


@dataclass(frozen=True)
class ServerConfig:
    """Everything the app needs; `validate()` checks the combination."""

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    library: str | None = None
    tool: str | None = None
    task_map: Mapping[str, str] = field(default_factory=dict)
    router: str = "embedded"
    synthesize: bool = False
    ray_address: str | None = None  # None: no Ray; "": a local Ray; else a cluster address
    workers: int = field(default_factory=default_workers)
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_batch: int = DEFAULT_MAX_BATCH
    max_pending: int = DEFAULT_MAX_PENDING
    #: Append every scored sample to this rollout file (`rewardsmith.rollout_log`).
    request_log: str | None = None
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS

    @property
    def max_reading(self) -> int:
        """Request bodies read at once (past that, 503): `READING_PER_SLOT` x max_pending."""
        return READING_PER_SLOT * self.max_pending

    def validate(self) -> ServerConfig:
        """Raise `ConfigError` on a setting the server must not start with."""
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(
                f"refusing to listen on {self.host} without a token: anyone who can reach it "
                f"could use this machine's CPUs. Pass --token T (or set ${TOKEN_ENV}), or bind "
                "127.0.0.1"
            )
        checks = {
            "workers": self.workers >= 1,
            "deadline": self.deadline_seconds > 0,
            "max body": self.max_body_bytes >= 1024,
            "max batch": self.max_batch >= 1,
            "max pending": self.max_pending >= 1,
            "body timeout": self.body_timeout_seconds > 0,
            "port": 0 <= self.port <= 65535,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ConfigError(f"bad server setting(s): {', '.join(bad)} out of range")
        return self


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
