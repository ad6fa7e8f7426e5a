"""Record agent sessions into cassettes: HTTP/LLM traffic, tool calls, world deltas.

```python
from recorder import record, tool

with record("cassettes/refund.cassette", world=conn, case_id="refund-4812") as rec:
    run_agent(...)  # unmodified: httpx, openai, anthropic and requests calls are captured
```

The public API is what ``__all__`` lists; every other module is private.
"""

import importlib as _importlib
import typing as _typing

from . import _interceptors  # noqa: F401  (registers the HTTP interceptors with _session)
from ._errors import (
    CassetteCorrupt,
    CassetteError,
    CassetteNotFound,
    CassetteVersionUnsupported,
    ConfigError,
    FixtureError,
    FixtureUnsupported,
    RecordingClosed,
    RecordingFailed,
    ReplayError,
    SandboxViolation,
    ToolSchemaError,
)
from ._version import __version__

if _typing.TYPE_CHECKING:
    from ._bounds import load_json
    from ._capture import keep_capture, world_hash
    from ._delta import net_delta
    from ._hooks import Hooks
    from ._ignore import DEFAULT_IGNORE_HOSTS
    from ._llm import LlmCall, LlmToolCall, llm_call
    from ._manifest import Captured
    from ._playback import Playback, playback, refusal
    from ._reader import Cassette, holds_events, read_cassette, read_header
    from ._recording import Recording, record
    from ._redact import Redaction
    from ._schema import (
        FORMAT_VERSION,
        ErrorEvent,
        ErrorInfo,
        Event,
        Footer,
        Header,
        HttpEvent,
        HttpRequest,
        HttpResponse,
        Pins,
        RowChange,
        Stopped,
        Timings,
        ToolEvent,
        Usage,
        UserEvent,
        ViolationEvent,
        WarningEvent,
        WorldDelta,
    )
    from ._secret_names import SECRET_WORDS, secret_named
    from ._secrets import PLACEHOLDER, Secrets
    from ._session import patched, unrecorded
    from ._sources import (
        HTTP_MATCHERS,
        TOOL_MATCHERS,
        USER_MATCHERS,
        RecordedAnswers,
        Source,
        ToolRequest,
        UserTurn,
    )
    from ._tools import Tool, tool, tool_schema_hash
    from ._volatile import IGNORE_FIELD_PRESETS, VolatileFields
    from ._writer import write_cassette

_EXPORTS: dict[str, str] = {
    "load_json": "._bounds",
    "keep_capture": "._capture",
    "world_hash": "._capture",
    "net_delta": "._delta",
    "Hooks": "._hooks",
    "DEFAULT_IGNORE_HOSTS": "._ignore",
    "LlmCall": "._llm",
    "LlmToolCall": "._llm",
    "llm_call": "._llm",
    "Captured": "._manifest",
    "Playback": "._playback",
    "playback": "._playback",
    "refusal": "._playback",
    "Cassette": "._reader",
    "holds_events": "._reader",
    "read_cassette": "._reader",
    "read_header": "._reader",
    "Recording": "._recording",
    "record": "._recording",
    "Redaction": "._redact",
    "ErrorEvent": "._schema",
    "ErrorInfo": "._schema",
    "Event": "._schema",
    "FORMAT_VERSION": "._schema",
    "Footer": "._schema",
    "Header": "._schema",
    "HttpEvent": "._schema",
    "HttpRequest": "._schema",
    "HttpResponse": "._schema",
    "Pins": "._schema",
    "RowChange": "._schema",
    "Stopped": "._schema",
    "Timings": "._schema",
    "ToolEvent": "._schema",
    "Usage": "._schema",
    "UserEvent": "._schema",
    "ViolationEvent": "._schema",
    "WarningEvent": "._schema",
    "WorldDelta": "._schema",
    "SECRET_WORDS": "._secret_names",
    "secret_named": "._secret_names",
    "PLACEHOLDER": "._secrets",
    "Secrets": "._secrets",
    "patched": "._session",
    "unrecorded": "._session",
    "HTTP_MATCHERS": "._sources",
    "RecordedAnswers": "._sources",
    "Source": "._sources",
    "TOOL_MATCHERS": "._sources",
    "ToolRequest": "._sources",
    "USER_MATCHERS": "._sources",
    "UserTurn": "._sources",
    "Tool": "._tools",
    "tool": "._tools",
    "tool_schema_hash": "._tools",
    "IGNORE_FIELD_PRESETS": "._volatile",
    "VolatileFields": "._volatile",
    "write_cassette": "._writer",
}
"""Each public name but the errors and ``__version__``, and the module it is in: imported
when first asked for. ``import recorder`` alone (the errors every command needs, the
version) takes milliseconds, not the 0.4 s of the cassette models and the capture."""


def __getattr__(name: str) -> _typing.Any:
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'recorder' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "DEFAULT_IGNORE_HOSTS",
    "FORMAT_VERSION",
    "HTTP_MATCHERS",
    "IGNORE_FIELD_PRESETS",
    "PLACEHOLDER",
    "SECRET_WORDS",
    "TOOL_MATCHERS",
    "USER_MATCHERS",
    "Captured",
    "Cassette",
    "CassetteCorrupt",
    "CassetteError",
    "CassetteNotFound",
    "CassetteVersionUnsupported",
    "ConfigError",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "FixtureError",
    "FixtureUnsupported",
    "Footer",
    "Header",
    "Hooks",
    "HttpEvent",
    "HttpRequest",
    "HttpResponse",
    "LlmCall",
    "LlmToolCall",
    "Pins",
    "Playback",
    "RecordedAnswers",
    "Recording",
    "RecordingClosed",
    "RecordingFailed",
    "Redaction",
    "ReplayError",
    "RowChange",
    "SandboxViolation",
    "Secrets",
    "Source",
    "Stopped",
    "Timings",
    "Tool",
    "ToolEvent",
    "ToolRequest",
    "ToolSchemaError",
    "Usage",
    "UserEvent",
    "UserTurn",
    "ViolationEvent",
    "VolatileFields",
    "WarningEvent",
    "WorldDelta",
    "__version__",
    "holds_events",
    "keep_capture",
    "llm_call",
    "load_json",
    "net_delta",
    "patched",
    "playback",
    "read_cassette",
    "read_header",
    "record",
    "refusal",
    "secret_named",
    "tool",
    "tool_schema_hash",
    "unrecorded",
    "world_hash",
    "write_cassette",
]
