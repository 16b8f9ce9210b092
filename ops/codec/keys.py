"""0.1's `python -m ops.codec.keys new KID`: now `duragent codec-key KID` (until 0.3, CHANGELOG.md)."""

import sys

from ops._command import run_moved

if __name__ == "__main__":
    argv = sys.argv[1:]
    run_moved("ops.codec.keys", "codec-key", argv[1:] if argv[:1] == ["new"] else argv)
