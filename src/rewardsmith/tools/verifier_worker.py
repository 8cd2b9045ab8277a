"""A verifier worker process: builds a tool, runs its `check_group` on what the pool sends.

Started by `rewardsmith.tools.verifier_pool` as a `rewardsmith.sandbox.process.WorkerProcess`
(a fresh interpreter that imports this module, not the whole of rewardsmith). Its config
names the tool (`factory` "module:Class", `spec`, `params`) and the `timeout` of each step.
It warms the tool up, says `Ready`, then for each `Job` it receives sends the events of
`tool.check_group` as they happen, or `ToolFailed` (the messages:
`rewardsmith.tools.verifier_messages`).
The work runs on this process's main thread, where `deadline` can interrupt each step; the
pool kills the process when even that does not help. End of file on its input (the pool
closed, or its process died) ends it.
"""

from __future__ import annotations

import importlib
import os
import signal
from typing import Any

from rewardsmith.sandbox.process import FrameError, recv, send
from rewardsmith.tools.base import AnswerVerifier
from rewardsmith.tools.deadline import StepTimeout, deadline
from rewardsmith.tools.verifier_messages import (
    MessageError,
    Ready,
    ToolFailed,
    event_from_check,
    read_job,
)
from rewardsmith.types import ToolSpec

# The warm-up normally takes well under a second; it must never keep a worker from starting.
STARTUP_WARM_UP_SECONDS = 20.0


def build_tool(config: dict[str, Any]) -> AnswerVerifier:
    """The tool the config names: `factory(ToolSpec.from_dict(spec), **params)`."""
    module_name, _, class_name = str(config["factory"]).partition(":")
    factory = getattr(importlib.import_module(module_name), class_name)
    tool = factory(ToolSpec.from_dict(config["spec"]), **config["params"])
    if not isinstance(tool, AnswerVerifier):
        raise TypeError(f"{config['factory']} is not an AnswerVerifier")
    return tool


def main(in_fd: int, out_fd: int, config: dict[str, Any]) -> None:
    """The worker's loop; see the module docstring."""
    # Ctrl-C reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tool = build_tool(config)
    timeout = float(config["timeout"])
    try:
        with deadline(STARTUP_WARM_UP_SECONDS):
            tool.warm_up()
    except (StepTimeout, Exception):  # only a speed-up: never a reason not to start
        pass
    try:
        send(out_fd, Ready(os.getpid()).frame())
        while True:
            frame = recv(in_fd)
            if frame is None:
                return
            job = read_job(frame)
            try:
                for event in tool.check_group(job.reference, job.completions, timeout):
                    send(out_fd, event_from_check(event).frame())
            except Exception as exc:  # the tool, not a completion: the pool says so
                send(out_fd, ToolFailed(f"{type(exc).__name__}: {exc}").frame())
    except (OSError, FrameError, MessageError):  # the pool is gone, or spoke nonsense
        return
