import os
import sys

from bench.cli import main

code = main()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # as worker.py and starter.py: a Temporal client can abort interpreter teardown
