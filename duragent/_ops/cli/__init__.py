"""The command line behind `starter.py`, one module per group of commands."""
