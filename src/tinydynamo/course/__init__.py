"""Grading helpers: each assignment's corpus and checkers, and the nbgrader tooling.

``aNN_*.py`` modules hold what an assignment's tests need (case corpora and checkers that plug a
learner's function into the reference pipeline and explain each failure). ``checking`` holds the
rules they all follow (no delegation to the reference, complete feedback) and the mutation check
of their tests. ``check``, ``release`` and ``grade`` are the instructor and learner commands
behind ``make test``, ``make assignments`` and ``make grade``.
"""
