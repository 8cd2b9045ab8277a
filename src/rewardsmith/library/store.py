"""The tool library: one SQLite file with tools, their versions and an append-only event log.

Every change (a tool registered, added, updated, retired) is written in one transaction
together with its event, so a crash mid-write loses nothing already committed. The event
table refuses UPDATE and DELETE (triggers), so the log can only grow. Later parts of
rewardsmith (router, synthesis, search) log their decisions here with `log_event`.

The file may be shared and may be damaged. Another process holding the write lock is waited
for at most `LOCK_WAIT_S`, then the operation fails as a `LibraryError` saying so, before it
wrote anything. A row whose JSON or spec does not parse is a bad row, not a crash: listing
skips it with a warning that names the tool (or event), and asking for that tool by name is a
`LibraryError` naming it.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
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
# Seconds a statement waits for another process's write lock before it fails: a writer
# stopped mid-transaction must not hold a command for minutes.
LOCK_WAIT_S = 10.0

log = logging.getLogger(__name__)

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
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=LOCK_WAIT_S)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            with self._conn:
                self._conn.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            if _locked(exc):
                raise _lock_error(self.path, "open it") from None
            raise LibraryError(
                f"cannot open tool library {self.path}: {exc}; pass --library PATH or set "
                "REWARDSMITH_HOME to a writable folder"
            ) from exc
        self._lock = threading.RLock()
        self._tools: dict[tuple[str, int], RewardTool] = {}
        with self._errors("register the built-in tools"):
            self._check_schema()
            self._register_builtins()

    # -- reading ---------------------------------------------------------------------------

    def names(self, include_retired: bool = False) -> list[str]:
        """Names of the tools in the library (latest versions)."""
        return [r.spec.name for r in self.records(include_retired)]

    def records(self, include_retired: bool = False) -> list[ToolRecord]:
        """The latest version of every tool, sorted by name."""
        rows = self._query(
            "SELECT spec, config, created_at, retired, name, version FROM tools t WHERE version = "
            "(SELECT MAX(version) FROM tools u WHERE u.name = t.name) ORDER BY name"
        )
        records = [r for r in map(self._record_or_warn, rows) if r is not None]
        return [r for r in records if include_retired or not r.retired]

    def record(self, name: str, version: int | None = None) -> ToolRecord:
        """One stored tool version (the latest when `version` is None)."""
        if version is None:
            rows = self._query(
                "SELECT spec, config, created_at, retired, name, version FROM tools WHERE name = ? "
                "ORDER BY version DESC LIMIT 1",
                (name,),
            )
        else:
            rows = self._query(
                "SELECT spec, config, created_at, retired, name, version FROM tools WHERE name = ? AND version = ?",
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
            "SELECT spec, config, created_at, retired, name, version FROM tools WHERE name = ? ORDER BY version",
            (name,),
        )
        if not rows:
            raise UnknownToolError(name, self.names())
        return [r for r in map(self._record_or_warn, rows) if r is not None]

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
        self,
        tool: str | None = None,
        limit: int | None = None,
        *,
        kind: str | None = None,
        offset: int = 0,
    ) -> list[Event]:
        """Events, oldest first; only those about `tool` and of `kind` when given; the last
        `limit` ones, skipping the newest `offset` (a page further back). An event whose
        detail does not parse is skipped with a warning naming it."""
        sql = "SELECT id, ts, kind, tool, version, detail FROM events"
        where = [(c, v) for c, v in (("tool", tool), ("kind", kind)) if v is not None]
        args: tuple[Any, ...] = tuple(v for _, v in where)
        if where:
            sql += " WHERE " + " AND ".join(f"{c} = ?" for c, _ in where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if offset:
            sql += (
                f" OFFSET {int(offset)}" if limit is not None else f" LIMIT -1 OFFSET {int(offset)}"
            )
        rows = self._query(sql, args)
        events = []
        for r in reversed(rows):
            try:
                detail = json.loads(r[5])
            except (TypeError, ValueError, RecursionError):
                log.warning(
                    "library %s: event %s (%s) has a malformed detail; skipped",
                    self.path,
                    r[0],
                    r[3] or r[2],
                )
                continue
            events.append(
                Event(
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    detail if isinstance(detail, dict) else {"detail": detail},
                )
            )
        return events

    def count_events(self, tool: str | None = None, *, kind: str | None = None) -> int:
        """How many events `history` with these filters would list."""
        where = [(c, v) for c, v in (("tool", tool), ("kind", kind)) if v is not None]
        sql = "SELECT COUNT(*) FROM events"
        if where:
            sql += " WHERE " + " AND ".join(f"{c} = ?" for c, _ in where)
        return int(self._query(sql, tuple(v for _, v in where))[0][0])

    # -- writing ---------------------------------------------------------------------------

    def add(
        self, spec: ToolSpec, config: Mapping[str, Any], note: str = "", *, retired: bool = False
    ) -> ToolSpec:
        """Store a new tool, or a new version of an existing one; returns the stored spec.

        The tool is built once first, so a config that cannot work is refused here, and
        closed: validating keeps no live tool (a reward function's check report is reused
        when the tool is built again to score). `retired=True` keeps a candidate that was
        refused (synthesis stores rejected tools with their reasons): it is stored retired
        and not built, since it may not build.
        """
        check_tool_name(spec.name)
        if not retired:
            build_tool(spec, config, resolve=self.get).close()
        with self._errors(f"add {spec.name}"), self._lock, self._conn:
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
        with self._errors(f"retire {name}"), self._lock, self._conn:
            self._conn.execute("UPDATE tools SET retired = 1 WHERE name = ?", (name,))
            self._event("retire", name, None, {"reason": reason})

    def log_event(self, kind: str, tool: str | None = None, **detail: Any) -> None:
        """Append an event (routing decisions, synthesis requests...) to the log."""
        with self._errors(f"log a {kind} event"), self._lock, self._conn:
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
        with self._errors("read it"), self._lock:
            return self._conn.execute(sql, args).fetchall()

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """SQLite's errors as `LibraryError`s that say what failed and what to do."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise  # a closed library used again: a bug in the caller, not the file
        except sqlite3.Error as exc:
            if _locked(exc):
                raise _lock_error(self.path, doing) from None
            raise LibraryError(f"tool library {self.path}: cannot {doing}: {exc}") from None

    def _record(self, row: tuple[Any, ...]) -> ToolRecord:
        """A stored row as a record; a row that does not parse is a `LibraryError` naming it."""
        try:
            spec = ToolSpec.from_dict(json.loads(row[0]))
            config = json.loads(row[1])
            if not isinstance(config, dict):
                raise TypeError("config is not a JSON object")
            _check_types(spec)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            raise LibraryError(
                f"tool library {self.path}: the row of tool {_row_name(row)} is malformed "
                f"({type(exc).__name__}: {str(exc)[:120]}); retire it or add a new version"
            ) from None
        return ToolRecord(spec=spec, config=config, created_at=str(row[2]), retired=bool(row[3]))

    def _record_or_warn(self, row: tuple[Any, ...]) -> ToolRecord | None:
        try:
            return self._record(row)
        except LibraryError as exc:
            log.warning("%s; skipped", exc)
            return None

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
            elif not str(row[0]).isdigit() or int(row[0]) > SCHEMA_VERSION:
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
                try:
                    stored = ToolSpec.from_dict(json.loads(row[1]))
                    stored_config = json.loads(row[2])
                except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
                    log.warning(
                        "library %s: the stored row of built-in %s@%s is malformed; storing "
                        "the built-in anew",
                        self.path,
                        builtin.spec.name,
                        row[0],
                    )
                    stored, stored_config = replace(builtin.spec, version=row[0]), None
                if stored.provenance != "builtin":
                    continue  # a user tool took a builtin's name on purpose; keep it
                unchanged = replace(stored, version=builtin.spec.version) == builtin.spec
                if unchanged and stored_config == config:
                    continue
                spec = replace(builtin.spec, version=row[0] + 1)
                self._insert(spec, config)
                self._event("update", spec.name, spec.version, {"spec": spec.to_dict()})


def _check_types(spec: ToolSpec) -> None:
    """Raise `TypeError` unless a stored spec's fields have the types code reads them as (a
    row written by hand or another tool may hold a number where text belongs)."""
    texts = (spec.name, spec.kind, spec.description, spec.reference_format, spec.cost)
    if not all(isinstance(t, str) for t in texts) or not isinstance(spec.validation, dict):
        raise TypeError("a text field of the spec is not text")
    if not all(isinstance(x, str) for x in (*spec.domains, *spec.exemplars, spec.provenance)):
        raise TypeError("domains, exemplars and provenance must be text")


def _locked(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _lock_error(path: Path, doing: str) -> LibraryError:
    return LibraryError(
        f"tool library {path} is locked by another process (waited {LOCK_WAIT_S:g} s to "
        f"{doing}); nothing was written. Try again when that process is done, or pass "
        "--library PATH to use another file"
    )


def _row_name(row: tuple[Any, ...]) -> str:
    """`name@version` of a stored tool row (the columns, not its spec: that may not parse)."""
    return f"{row[4]!r}@{row[5]}" if len(row) > 5 else "?"
