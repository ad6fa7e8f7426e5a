"""A stdio MCP server that says it has started (a file, ``argv[1]``), then answers.

For ``test_mcp_cold_start``: standard library only, no tools.
"""

import json
import sys
from pathlib import Path

Path(sys.argv[1]).write_text("up")
for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is None:
        continue
    result: dict[str, object] = {}
    if message.get("method") == "initialize":
        result = {
            "protocolVersion": message.get("params", {}).get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "booting", "version": "1"},
        }
    elif message.get("method") == "tools/list":
        result = {"tools": []}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
