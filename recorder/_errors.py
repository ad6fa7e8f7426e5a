"""The one exception tree of agent-replay (recorder and replay alike).

```
ReplayError
├─ CassetteError
│   ├─ CassetteNotFound (+FileNotFoundError)
│   ├─ CassetteCorrupt
│   ├─ CassetteVersionUnsupported
│   └─ RecordingFailed          a strict recording could not start or go on (a full disk...)
├─ FixtureUnsupported          replay met a call the cassette cannot answer
├─ ToolSchemaError (+TypeError) a tool's signature cannot become a JSON schema
├─ FixtureError                the starting world cannot be built
├─ SandboxViolation            a sandboxed trial reached a host it may not
├─ RecordingClosed             a call came after its recording closed (``Hooks.refuse_late``)
└─ ConfigError                 bad settings (redaction paths, pins, ...)
```

replay's own errors derive from ``ReplayError`` too, and live where replay
raises them: ``replay.CaseFileError`` (+ValueError: a case file is malformed,
named with its field; ``replay/cases``) and ``replay.AssertionSyntaxError``
(+ValueError: a state assertion does not parse; ``replay/graders/_expr.py``).

Misuse of the API raises builtin ``TypeError``/``ValueError``; everything the
user can fix by changing a file or a setting raises a ``ReplayError`` whose
message names the file and says what to do.
"""

from __future__ import annotations

from pathlib import Path


class ReplayError(Exception):
    """Base class of every error agent-replay raises on purpose."""


class ConfigError(ReplayError):
    """A setting is invalid."""


class CassetteError(ReplayError):
    """A cassette cannot be read or written.

    Attributes:
        path: The cassette file concerned.
    """

    def __init__(self, message: str, *, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path}: {message}")


class CassetteNotFound(CassetteError, FileNotFoundError):
    """The cassette file does not exist."""

    def __init__(self, *, path: str | Path) -> None:
        super().__init__("no such cassette; check the path", path=path)


class CassetteCorrupt(CassetteError):
    """The file is not a cassette, or its bytes are damaged beyond a truncated tail."""


class CassetteVersionUnsupported(CassetteError):
    """The cassette was written in a format version this release cannot read.

    Attributes:
        version: The version found in the file.
    """

    def __init__(self, *, path: str | Path, version: int, supported: tuple[int, ...]) -> None:
        self.version = version
        known = ", ".join(str(v) for v in supported)
        super().__init__(
            f"cassette format version {version} is not supported (this release reads {known}); "
            "upgrade agent-replay or re-record the cassette",
            path=path,
        )


class RecordingFailed(CassetteError):
    """A recording made with ``strict=True`` could not start or go on.

    Without ``strict`` the same failure stops the recording, not the agent: the
    cassette keeps what was written and ends with a note (``Footer.stopped``),
    and one warning is logged.

    Attributes:
        path: The cassette file concerned.
        reason: Where and why the recording stopped, in one line.
    """

    def __init__(self, reason: str, *, path: str | Path) -> None:
        self.reason = reason
        super().__init__(reason, path=path)


class FixtureUnsupported(ReplayError):
    """Playback met a request the cassette holds no answer for.

    Never answered with a "close" recording: the trial's verdict becomes
    ``unsupported``.

    Attributes:
        request: A one-line description of the unmatched request.
        nearest: A description of the nearest recorded request, if any.
    """

    def __init__(self, *, request: str, nearest: str | None = None) -> None:
        self.request = request
        self.nearest = nearest
        hint = f"; nearest recorded: {nearest}" if nearest else "; the cassette has no such call"
        super().__init__(f"fixture unsupported: {request}{hint}")


class ToolSchemaError(ReplayError, TypeError):
    """A tool's signature cannot be turned into a JSON schema."""


class FixtureError(ReplayError):
    """A fixture cannot be turned into a world.

    Attributes:
        path: The fixture (or its description).
    """

    def __init__(self, message: str, *, path: str | Path) -> None:
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class SandboxViolation(ReplayError):
    """A sandboxed trial tried to reach a host other than the allowed endpoints.

    Attributes:
        url: The refused request's URL (redacted).
    """

    def __init__(self, *, url: str, allowed: tuple[str, ...]) -> None:
        self.url = url
        hosts = ", ".join(allowed) or "none"
        super().__init__(f"sandbox: {url} is not an allowed endpoint (allowed hosts: {hosts})")


class RecordingClosed(ReplayError):
    """A call came from a thread or task its recording left running, after it closed.

    Raised instead of letting the call out unrecorded (or into another
    recording's cassette) when the recording was made with ``Hooks(refuse_late=True)``:
    a harness that abandons an agent at its deadline uses it, so the agent can
    no longer reach its tools, its LLM or any other host.

    Attributes:
        path: The closed recording's cassette.
    """

    def __init__(self, *, path: str | Path) -> None:
        self.path = Path(path)
        super().__init__(
            f"the recording into {self.path} has closed: a call made after it (from a thread "
            "or task its trial left running) is refused"
        )
