"""Mutation testing, the tests' own tooling: do the tests notice a rule broken by one small change?

python -m tests.mutants audit     # the mutation audits' hand-written mutants (tests/mutants/audit.py)
python -m tests.mutants sweep     # every single-token mutant of the core rules (tests/mutants/sweep.py)
"""
