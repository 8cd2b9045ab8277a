"""The tool library: one SQLite file with tools, their versions and an append-only event log.

Every change (a tool registered, added, updated, retired) is written in one transaction
together with its event, so a crash mid-write loses nothing already committed. The event
table refuses UPDATE and DELETE (triggers), so the log can only grow. Later parts of
rewardsmith (router, synthesis, search) log their decisions here with `log_event`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsmith.config import default_library_path
from rewardsmith.errors import ConfigError, LibraryError, UnknownToolError
from rewardsmith.library.names import check_tool_name
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.types import RewardTool, ToolSpec

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tools (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    spec TEXT NOT NULL,
    config TEXT NOT NULL,
    created_at TEXT NOT NULL,
    retired INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (name, version)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool TEXT,
    version INTEGER,
    detail TEXT NOT NULL
);
-- The router reads its latest fit (kind, newest id) at every start: an index keeps that one
-- row's lookup flat however long the log grows.
CREATE INDEX IF NOT EXISTS events_by_kind ON events (kind, id);
CREATE TRIGGER IF NOT EXISTS events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"""


@dataclass(frozen=True)
class Event:
    """One line of the library's history."""

    id: int
    ts: str
    kind: str
    tool: str | None
    version: int | None
    detail: Mapping[str, Any]


@dataclass(frozen=True)
class ToolRecord:
    """A stored tool version."""

    spec: ToolSpec
    config: Mapping[str, Any]
    created_at: str
    retired: bool


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_tool_ref(ref: str) -> tuple[str, int | None]:
    """`"math"` -> ("math", None); `"math@2"` -> ("math", 2)."""
    name, sep, version = ref.partition("@")
    if not sep:
        return name, None
    if not version.isdigit():
        raise ConfigError(f"bad tool reference {ref!r}: expected NAME or NAME@VERSION")
    return name, int(version)


class Library:
    """The SQLite-backed tool library. Built-in tools are registered on first use.

    `Library()` opens `~/.rewardsmith/library.db` (or `$REWARDSMITH_HOME/library.db`);
    `Library(path)` opens or creates the given file. Safe to share between threads.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_library_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            with self._conn:
                self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise LibraryError(
                f"cannot open tool library {self.path}: {exc}; pass --library PATH or set "
                "REWARDSMITH_HOME to a writable folder"
            ) from exc
        self._lock = threading.RLock()
        self._tools: dict[tuple[str, int], RewardTool] = {}
        self._check_schema()
        self._register_builtins()

    # -- reading ---------------------------------------------------------------------------

    def names(self, include_retired: bool = False) -> list[str]:
        """Names of the tools in the library (latest versions)."""
        return [r.spec.name for r in self.records(include_retired)]

    def records(self, include_retired: bool = False) -> list[ToolRecord]:
        """The latest version of every tool, sorted by name."""
        rows = self._query(
            "SELECT spec, config, created_at, retired FROM tools t WHERE version = "
            "(SELECT MAX(version) FROM tools u WHERE u.name = t.name) ORDER BY name"
        )
        records = [self._record(row) for row in rows]
        return [r for r in records if include_retired or not r.retired]

    def record(self, name: str, version: int | None = None) -> ToolRecord:
        """One stored tool version (the latest when `version` is None)."""
        if version is None:
            rows = self._query(
                "SELECT spec, config, created_at, retired FROM tools WHERE name = ? "
                "ORDER BY version DESC LIMIT 1",
                (name,),
            )
        else:
            rows = self._query(
                "SELECT spec, config, created_at, retired FROM tools WHERE name = ? AND version = ?",
                (name, version),
            )
        if not rows:
            known = self.names()
            if version is not None and name in known:
                raise ConfigError(f"tool {name!r} has no version {version}")
            raise UnknownToolError(name, known)
        return self._record(rows[0])

    def versions(self, name: str) -> list[ToolRecord]:
        """Every stored version of one tool, oldest first."""
        rows = self._query(
            "SELECT spec, config, created_at, retired FROM tools WHERE name = ? ORDER BY version",
            (name,),
        )
        if not rows:
            raise UnknownToolError(name, self.names())
        return [self._record(row) for row in rows]

    def get(self, ref: str) -> RewardTool:
        """A ready-to-use tool for `NAME` or `NAME@VERSION` (built once, then reused). A
        retired version (by a user, or a candidate the gate rejected) is never built, even
        when named with its version; a superseded one may be pinned."""
        name, version = parse_tool_ref(ref)
        record = self.record(name, version)
        if record.retired:
            which = f"{name}@{version}" if version is not None else name
            raise ConfigError(
                f"tool {which!r} is retired (by a user, or rejected by the admission gate) and "
                "is not used; add it again to use it (`tools add`), or pick another tool"
            )
        check_tool_name(record.spec.name)
        key = (record.spec.name, record.spec.version)
        with self._lock:
            tool = self._tools.get(key)
            if tool is None:
                tool = build_tool(record.spec, record.config, resolve=self.get)
                self._tools[key] = tool
        return tool

    def history(
        self, tool: str | None = None, limit: int | None = None, *, kind: str | None = None
    ) -> list[Event]:
        """Events, oldest first; only those about `tool` and of `kind` when given; the last
        `limit` ones."""
        sql = "SELECT id, ts, kind, tool, version, detail FROM events"
        where = [(c, v) for c, v in (("tool", tool), ("kind", kind)) if v is not None]
        args: tuple[Any, ...] = tuple(v for _, v in where)
        if where:
            sql += " WHERE " + " AND ".join(f"{c} = ?" for c, _ in where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self._query(sql, args)
        return [
            Event(id=r[0], ts=r[1], kind=r[2], tool=r[3], version=r[4], detail=json.loads(r[5]))
            for r in reversed(rows)
        ]

    # -- writing ---------------------------------------------------------------------------

    def add(
        self, spec: ToolSpec, config: Mapping[str, Any], note: str = "", *, retired: bool = False
    ) -> ToolSpec:
        """Store a new tool, or a new version of an existing one; returns the stored spec.

        The tool is built once first, so a config that cannot work is refused here.
        `retired=True` keeps a candidate that was refused (synthesis stores rejected tools
        with their reasons): it is stored retired and not built, since it may not build.
        """
        check_tool_name(spec.name)
        if not retired:
            build_tool(spec, config, resolve=self.get)
        with self._lock, self._conn:
            latest = self._conn.execute(
                "SELECT MAX(version) FROM tools WHERE name = ?", (spec.name,)
            ).fetchone()[0]
            stored = replace(spec, version=(latest or 0) + 1)
            self._insert(stored, config, retired)
            kind = "add_retired" if retired else "add" if latest is None else "new_version"
            self._event(kind, stored.name, stored.version, {"note": note, "spec": stored.to_dict()})
        return stored

    def retire(self, name: str, reason: str = "") -> None:
        """Mark a tool retired: it stays in the file and its history, but is no longer used."""
        self.record(name)  # raises UnknownToolError with the known names
        with self._lock, self._conn:
            self._conn.execute("UPDATE tools SET retired = 1 WHERE name = ?", (name,))
            self._event("retire", name, None, {"reason": reason})

    def log_event(self, kind: str, tool: str | None = None, **detail: Any) -> None:
        """Append an event (routing decisions, synthesis requests...) to the log."""
        with self._lock, self._conn:
            self._event(kind, tool, None, detail)

    def close(self) -> None:
        with self._lock:
            for tool in self._tools.values():
                tool.close()
            self._tools.clear()
            self._conn.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    @staticmethod
    def _record(row: tuple[Any, ...]) -> ToolRecord:
        return ToolRecord(
            spec=ToolSpec.from_dict(json.loads(row[0])),
            config=json.loads(row[1]),
            created_at=row[2],
            retired=bool(row[3]),
        )

    def _insert(self, spec: ToolSpec, config: Mapping[str, Any], retired: bool = False) -> None:
        self._conn.execute(
            "INSERT INTO tools (name, version, spec, config, created_at, retired) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                spec.name,
                spec.version,
                json.dumps(spec.to_dict()),
                json.dumps(config),
                _now(),
                int(retired),
            ),
        )

    def _event(self, kind: str, tool: str | None, version: int | None, detail: Any) -> None:
        self._conn.execute(
            "INSERT INTO events (ts, kind, tool, version, detail) VALUES (?, ?, ?, ?, ?)",
            (_now(), kind, tool, version, json.dumps(detail, default=str)),
        )

    def _check_schema(self) -> None:
        with self._lock, self._conn:
            row = self._conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            if row is None:
                self._conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            elif int(row[0]) > SCHEMA_VERSION:
                raise LibraryError(
                    f"{self.path} was written by a newer rewardsmith (schema {row[0]}); upgrade"
                )

    def _register_builtins(self) -> None:
        """Add missing built-ins; store a new version when a built-in's definition changed."""
        with self._lock, self._conn:
            for builtin in BUILTINS:
                row = self._conn.execute(
                    "SELECT version, spec, config FROM tools WHERE name = ? "
                    "ORDER BY version DESC LIMIT 1",
                    (builtin.spec.name,),
                ).fetchone()
                config = builtin.config()
                if row is None:
                    spec = replace(builtin.spec, version=1)
                    self._insert(spec, config)
                    self._event("register", spec.name, 1, {"spec": spec.to_dict()})
                    continue
                stored = ToolSpec.from_dict(json.loads(row[1]))
                if stored.provenance != "builtin":
                    continue  # a user tool took a builtin's name on purpose; keep it
                unchanged = replace(stored, version=builtin.spec.version) == builtin.spec
                if unchanged and json.loads(row[2]) == config:
                    continue
                spec = replace(builtin.spec, version=row[0] + 1)
                self._insert(spec, config)
                self._event("update", spec.name, spec.version, {"spec": spec.to_dict()})
