"""``python -m examples.shop [OUT.cassette]``: record the refund demo (default: under .replay/).

The committed golden ``cassettes/refund-4812.cassette`` is only rewritten when named.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import record_refund

if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".replay/demo-cassettes/refund-4812.cassette")
    rec = record_refund(out)
    print(f"recorded {rec.path}")
