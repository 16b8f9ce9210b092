"""The `job` command with the bench's scenarios registered (`bench-noop`): the baseline's real command
line and process model, nothing else.  python -m bench.job run --scenario bench-noop --records 20 ..."""

from __future__ import annotations

import bench.scenarios  # noqa: F401 - registers bench-noop in this process
from baseline.cli import main

if __name__ == "__main__":
    main()
