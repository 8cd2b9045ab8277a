"""The harness's result records read back by the one reader (`channel_records`) exactly as
`Records` wrote them; a line not signed with the run's nonce reads as None, whatever it
claims (the callers refuse or skip it: tests/sandbox/test_attacks_verdict.py)."""

from __future__ import annotations

import json
import os

from rewardsmith.sandbox.harness import REASON_CHARS, Records, channel_records

NONCE = "a1b2c3"


def written(*records: tuple[str, object, str]) -> str:
    """What `Records` writes for `records`, as the caller's channel text."""
    read_fd, write_fd = os.pipe()
    report = Records(write_fd, NONCE)
    for kind, index, text in records:
        report(kind, index, text)
    report.flush()
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        return pipe.read().decode()


def test_records_read_back_as_written() -> None:
    values = json.dumps([{"value": "a b  c"}, 1.5])
    channel = written(
        # JSON records are kept whole, spaces and all
        ("load", "ok", ""),
        ("values", 0, values),
        ("result", 1, json.dumps([0.5, None])),
        # a reason is one line, clipped
        ("test", 2, "fail AssertionError:\n  1 != 2"),
        ("load", "fail", "x" * (REASON_CHARS + 50)),
        ("done", 3, ""),
    )
    assert list(channel_records(channel, NONCE)) == [
        ("load", "ok", ""),
        ("values", "0", values),
        ("result", "1", "[0.5, null]"),
        ("test", "2", "fail AssertionError: 1 != 2"),
        ("load", "fail", "x" * REASON_CHARS),
        ("done", "3", ""),
    ]


def test_a_line_without_the_runs_nonce_reads_as_none() -> None:
    channel = "\n".join(
        [
            f"{NONCE} load ok ",
            "deadbeef done 1 ",  # another nonce: forged
            f"{NONCE}done 1",  # no separator
            f"{NONCE} done",  # too short to be a record
            f"{NONCE} done 1 ",
        ]
    )
    assert list(channel_records(channel, NONCE)) == [
        ("load", "ok", ""),
        None,
        None,
        None,
        ("done", "1", ""),
    ]
