"""Chaos: runs of every demo agent while processes are SIGKILLed at random, then invariants checked from
the effects ledger and the engine (see `invariants`). `python -m bench chaos --engine temporal|baseline`."""
