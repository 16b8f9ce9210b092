"""The hand-rolled alternative to Temporal: the same agent loop and agents, checkpointed in SQLite.

One loop action is one step row; outputs are stored by reference; a resume rebuilds the loop by feeding
the stored outputs back in order (like Temporal replay) and checks each step against what the loop asks
now. See docs/baseline.md.
"""
