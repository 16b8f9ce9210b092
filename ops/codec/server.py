"""0.1's `python -m ops.codec.server`: now `duragent codec-server` (until 0.3, CHANGELOG.md)."""

import sys

from ops._command import run_moved

if __name__ == "__main__":
    run_moved("ops.codec.server", "codec-server", sys.argv[1:])
