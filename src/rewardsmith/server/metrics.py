"""Prometheus metrics of one server (`GET /metrics`), in a registry of its own so several
apps in one process (tests) do not share counters.

- `rewardsmith_http_requests_total{route,method,code}` and
  `rewardsmith_http_request_seconds{route}` (histogram), per route template;
- `rewardsmith_rewards_total{tool,status}`: every reward served;
- `rewardsmith_sample_timeouts_total{source}`: `tool` (the tool's own limit) or `deadline`
  (the server's per-request deadline);
- `rewardsmith_in_flight_requests`, `rewardsmith_reading_requests` (scoring requests whose
  body is still arriving, not admitted yet), `rewardsmith_queue_depth` (calls waiting for a
  scoring worker), `rewardsmith_busy_workers`, `rewardsmith_worker_restarts_total`,
  `rewardsmith_rejected_requests_total{reason}` (full, starting, stopping, reading, body,
  body_timeout, batch).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "MetricsMiddleware"]

# Latency buckets from a cached rule (milliseconds) to a deadline-bound batch (a minute).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    """The counters and gauges of one server."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "rewardsmith_http_requests", "HTTP requests", ["route", "method", "code"], registry=r
        )
        self.latency = Histogram(
            "rewardsmith_http_request_seconds",
            "HTTP request latency",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rewards = Counter(
            "rewardsmith_rewards", "Rewards served", ["tool", "status"], registry=r
        )
        self.timeouts = Counter(
            "rewardsmith_sample_timeouts", "Samples that timed out", ["source"], registry=r
        )
        self.rejected = Counter(
            "rewardsmith_rejected_requests", "Requests refused", ["reason"], registry=r
        )
        self.in_flight = Gauge(
            "rewardsmith_in_flight_requests", "Requests being handled", registry=r
        )
        self.queue_depth = Gauge(
            "rewardsmith_queue_depth", "Scoring calls waiting for a worker", registry=r
        )
        self.busy_workers = Gauge("rewardsmith_busy_workers", "Workers scoring", registry=r)
        self.reading = Gauge(
            "rewardsmith_reading_requests", "Scoring requests still sending their body", registry=r
        )
        self.restarts = Gauge(
            "rewardsmith_worker_restarts_total", "Workers killed and replaced", registry=r
        )
        # Labelled series looked up once each (`labels()` takes a lock and builds a key:
        # per request, that was a measurable share of the event loop's time).
        self._request_series: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._reward_series: dict[tuple[str, str], Any] = {}

    def count_request(self, route: str, method: str, code: int, seconds: float) -> None:
        """Count one HTTP request by route template, method and status, and time it."""
        key = (route, method, code)
        series = self._request_series.get(key)
        if series is None:
            series = (self.requests.labels(route, method, str(code)), self.latency.labels(route))
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def observe_counts(self, counts: dict[tuple[str, str], int], deadline_timeouts: int) -> None:
        """Count a request's rewards: (tool, status) -> how many."""
        for key, n in counts.items():
            series = self._reward_series.get(key)
            if series is None:
                series = self._reward_series[key] = self.rewards.labels(*key)
            series.inc(n)
        tool_timeouts = counts_total(counts, "timeout") - deadline_timeouts
        if deadline_timeouts:
            self.timeouts.labels("deadline").inc(deadline_timeouts)
        if tool_timeouts > 0:
            self.timeouts.labels("tool").inc(tool_timeouts)

    def render(self, pool_stats: Callable[[], tuple[int, int, int]] | None = None) -> bytes:
        """The Prometheus text; `pool_stats` gives (waiting, busy, restarts) now."""
        if pool_stats is not None:
            waiting, busy, restarts = pool_stats()
            self.queue_depth.set(waiting)
            self.busy_workers.set(busy)
            self.restarts.set(restarts)
        return generate_latest(self.registry)


def counts_total(counts: dict[tuple[str, str], int], status: str) -> int:
    return sum(n for (_, s), n in counts.items() if s == status)


class MetricsMiddleware:
    """ASGI middleware: counts every HTTP request by route template, method and status, and
    times it. Outermost, so refusals by the other middleware (413, 503) are counted too."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            route = scope.get("route")
            path = getattr(route, "path", None) or _known_path(scope.get("path", ""))
            elapsed = time.perf_counter() - start
            self.metrics.count_request(path, scope.get("method", ""), status["code"], elapsed)


_PATHS = ("/v1/score", "/v1/openrlhf", "/v1/route", "/v1/tools", "/health", "/metrics")


def _known_path(path: str) -> str:
    # Requests refused before routing have no route: keep label values to a fixed set.
    return path if path in _PATHS else "other"
