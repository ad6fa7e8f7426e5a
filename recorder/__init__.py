"""Record agent sessions into cassettes: HTTP/LLM traffic, tool calls, world deltas.

```python
from recorder import record, tool

with record("cassettes/refund.cassette", world=conn, case_id="refund-4812") as rec:
    run_agent(...)  # unmodified: httpx, openai, anthropic and requests calls are captured
```

The public API is what ``__all__`` lists; every other module is private.
"""

from . import _interceptors  # noqa: F401  (registers the HTTP interceptors with _session)
from ._bounds import load_json
from ._capture import keep_capture, world_hash
from ._delta import net_delta
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
from ._hooks import Hooks
from ._ignore import DEFAULT_IGNORE_HOSTS
from ._llm import LlmCall, LlmToolCall, llm_call
from ._manifest import Captured
from ._playback import Playback, playback, refusal
from ._reader import Cassette, holds_events, read_cassette, read_header
from ._recording import Recording, __version__, record
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
