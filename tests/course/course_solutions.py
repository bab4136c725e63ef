"""The solution notebooks' own functions, for the course tests to use as a learner's answer.

The reference functions cannot stand in for a learner's: while a learner's function is graded,
calling them raises (``tinydynamo.course.checking.no_delegation``), and the checkers refuse them.
"""
import functools

from tinydynamo.course.checking import solution_cells


@functools.cache
def solution_functions(assignment):
    """The namespace left by the solution notebook's setup and solution cells (no test cells)."""
    namespace = {"__name__": "__main__"}
    for cell in solution_cells(assignment):
        if not cell.points:
            exec(compile(cell.source, f"<{assignment}: {cell.grade_id}>", "exec"), namespace)
    return namespace
