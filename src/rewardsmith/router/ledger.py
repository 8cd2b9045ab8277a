"""A routing run's bookkeeping: which signatures it has seen, how many samples each covered,
and the library events that record them.

Every new signature costs an LLM call (with the `llm` backend) and a `route` /
`synthesize_request` event. Signatures come from the data (a `task` field names one), so a
file with a million distinct task ids would cost a million calls and events. A run admits
the first `max_signatures` (`MAX_SIGNATURES` by default); later ones are still routed, by the
embedded backend and without an event of their own, their samples counted under
`OVERFLOW` in the run's `route_counts`, and one warning says so.

The events are bookkeeping, not results: a library another process keeps locked past the
store's bounded wait (`rewardsmith.library.store.LOCK_WAIT_S`) costs the run its events from
then on (one wait, one warning), never its scores.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.errors import LibraryError
from rewardsmith.library.store import Library
from rewardsmith.router.decision import Decision
from rewardsmith.types import Sample

log = logging.getLogger("rewardsmith.router.router")

# Distinct signatures per run that get an LLM call and an event of their own.
MAX_SIGNATURES = 500
# The `route_counts` key of the samples of signatures past the cap.
OVERFLOW = "(signatures past the cap)"
# Characters of a signature's first prompt kept in its library event.
EVENT_EXAMPLE_CHARS = 80


class RouteLedger:
    """See the module docstring."""

    def __init__(self, library: Library, log_events: bool, max_signatures: int) -> None:
        if max_signatures < 1:
            raise ValueError("max_signatures must be >= 1")
        self.library = library
        self.log_events = log_events
        self.max_signatures = max_signatures
        self.counts: Counter[str] = Counter()
        self.signatures: dict[str, Decision] = {}  # signature -> its logged decision
        self._admitted: set[str] = set()
        self._overflow_synthesize = 0
        self._warned_cap = False
        self._log_failed = False

    def admit(self, signature: str) -> bool:
        """May `signature` have an LLM call and an event of its own (the first
        `max_signatures` of the run may)?"""
        if signature in self._admitted:
            return True
        if len(self._admitted) < self.max_signatures:
            self._admitted.add(signature)
            return True
        if not self._warned_cap:
            self._warned_cap = True
            log.warning(
                "router: more than %d distinct task signatures in this run (many distinct "
                "`task` values?); the rest are routed by the embedded backend without an LLM "
                "call and counted together in the run's totals (raise the cap with "
                "Router(max_signatures=N))",
                self.max_signatures,
            )
        return False

    def record(
        self,
        decided: Mapping[str, Decision],
        members: Mapping[str, list[int]],
        batch: Sequence[Sample],
    ) -> None:
        """Count samples per signature; log each admitted signature's first decision."""
        per_sig: dict[str, list[str]] = {}
        for key in sorted(decided):
            per_sig.setdefault(decided[key].signature, []).append(key)
        for sig, keys in sorted(per_sig.items()):
            n = sum(len(members[k]) for k in keys)
            first = decided[keys[0]]
            if not self.admit(sig):
                self.counts[OVERFLOW] += n
                self._overflow_synthesize += n if first.action != "tool" else 0
                continue
            self.counts[sig] += n
            if sig not in self.signatures:
                self.signatures[sig] = first
                self._log_decision(first, batch[members[keys[0]][0]], n)

    def known(self, signature: str) -> Decision | None:
        """The decision logged for `signature`, if any."""
        return self.signatures.get(signature)

    def close(self, backend: str, llm_usage: dict[str, int] | None) -> None:
        """Append the run's `route_counts` event and start over."""
        if self.log_events and self.counts:
            synthesize = self._overflow_synthesize + sum(
                n
                for sig, n in self.counts.items()
                if sig != OVERFLOW and self.signatures[sig].action != "tool"
            )
            self._log(
                "route_counts",
                None,
                counts=dict(self.counts),
                backend=backend,
                synthesize=synthesize,
                llm_usage=llm_usage,
            )
        self.counts.clear()
        self._overflow_synthesize = 0

    def _log_decision(self, decision: Decision, example: Sample, count: int) -> None:
        if not self.log_events:
            return
        kind = "route" if decision.action == "tool" else "synthesize_request"
        tool = decision.label if decision.action == "tool" else None
        self._log(
            kind,
            tool,
            signature=decision.signature,
            decision=decision.to_dict(),
            samples=count,
            example=example.prompt_text()[:EVENT_EXAMPLE_CHARS],
        )

    def _log(self, kind: str, tool: str | None, **detail: Any) -> None:
        if self._log_failed:  # each try would wait out the lock again
            return
        try:
            self.library.log_event(kind, tool, **detail)
        except LibraryError as exc:
            self._log_failed = True
            log.warning("router: routing goes on without its library events: %s", exc)
