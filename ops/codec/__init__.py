"""0.1's `python -m ops.codec.server` and `python -m ops.codec.keys new KID` (until 0.3, CHANGELOG.md)."""
