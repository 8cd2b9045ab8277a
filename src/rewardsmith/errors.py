"""Every error rewardsmith raises on purpose. Messages say what was wrong and how to fix it."""

from __future__ import annotations


class RewardsmithError(Exception):
    """Base class of rewardsmith's errors."""


class ConfigError(RewardsmithError, ValueError):
    """A tool or command was configured wrongly (bad parameter, unknown option)."""


class UnknownToolError(RewardsmithError, KeyError):
    """A tool name is not in the library."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown tool {self.name!r}; known tools: {', '.join(self.known)}"


class InputError(RewardsmithError, ValueError):
    """Input data is malformed (a bad JSONL line, a missing field)."""


class SampleError(InputError):
    """A sample object breaks the sample rules (`samples.sample_from_dict`); `field` names the
    field at fault (None: the value itself is not an object). The CLI reports it with the
    path and line, the server as a 422 whose location ends in the field."""

    def __init__(self, field: str | None, message: str) -> None:
        self.field = field
        super().__init__(message)


class LibraryError(RewardsmithError):
    """The tool library file cannot be opened or is inconsistent."""


class MissingDependencyError(RewardsmithError, ImportError):
    """An optional dependency is not installed; the message names the install command."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is required for this feature; install it with "
            f"`pip install 'rewardsmith[{extra}]'` (or `pip install {package}`)"
        )


class InvalidReferenceError(RewardsmithError, ValueError):
    """A sample's reference is missing or cannot be parsed; the tool scores it
    `invalid_reference` instead of raising."""


class LLMError(RewardsmithError):
    """An LLM endpoint could not be reached or did not answer usably (after retries)."""


class ServiceError(RewardsmithError):
    """A reward server refused a request or could not be reached (after retries)."""
