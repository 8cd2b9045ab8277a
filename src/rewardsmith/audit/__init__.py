"""`rewardsmith audit`: a reward function against the exploit corpus, with rates.

A library tool (`NAME` or `NAME@V`) or a Python file holding a reward function (run in the
sandbox: `file_target`) is scored on the corpus built from an examples file
(`rewardsmith.exploits`); the report (`report`) gives, per attack class, the false-pass rate
with its Wilson 95% interval (`stats`) and examples, the false-fail rate on right answers,
and a one-line verdict. Library tools keep their latest rates as an `audit` event.
"""

from rewardsmith.audit.file_target import FileRewardTool, find_function
from rewardsmith.audit.report import FAIL_ON, AuditReport, ClassRate, FailOn
from rewardsmith.audit.runner import audit_tool, latest_audit, log_audit, not_applicable
from rewardsmith.audit.stats import wilson_interval

__all__ = [
    "FAIL_ON",
    "AuditReport",
    "ClassRate",
    "FailOn",
    "FileRewardTool",
    "audit_tool",
    "find_function",
    "latest_audit",
    "log_audit",
    "not_applicable",
    "wilson_interval",
]
