"""0.1's `python -m ops.approver_keys new NAME`: now `duragent approver-key NAME` (until 0.3, CHANGELOG.md)."""

import sys

from ops._command import run_moved

if __name__ == "__main__":
    argv = sys.argv[1:]
    run_moved("ops.approver_keys", "approver-key", argv[1:] if argv[:1] == ["new"] else argv)
