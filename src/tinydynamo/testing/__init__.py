"""Shared helpers for tests, the book, benchmarks and assignments (see ``models`` for the zoo)."""
