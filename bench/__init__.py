"""Side by side: the Temporal runner and the SQLite checkpoint baseline, measured on this machine in one run.

    python -m bench all                 # overhead, throughput, recovery, storage, lines of code → results/
    python -m bench chaos --engine temporal|baseline --runs N --seed S

See docs/benchmarks.md for what each measurement means and how it is taken.
"""
