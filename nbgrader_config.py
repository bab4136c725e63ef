"""nbgrader configuration: solutions/ is the instructor's source, assignments/ the release."""
import pathlib

import nbgrader
from nbgrader.converters.autograde import Autograde

import tinydynamo.course
from tinydynamo.course.execute import ContainedExecute

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.course_id = "tinydynamo"

# A learner's notebook may raise, loop forever, print megabytes or kill its kernel: none of it may
# crash grading. Exceptions fail their test; a cell past its time limit is interrupted; output is
# truncated; a cell that kills the kernel fails alone (ContainedExecute restarts the kernel).
c.Execute.timeout = 300  # seconds per cell; ContainedExecute inherits every Execute setting
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = False
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 60
c.Autograde.autograde_preprocessors = [
    ContainedExecute if p.__name__ == "Execute" else p
    for p in Autograde.class_traits()["autograde_preprocessors"].default()
]

# Release notebooks keep no outputs, so regenerating them is byte-identical.
c.ClearOutput.enabled = True

# The feedback page wraps long lines instead of hiding them behind a scroll bar: failure messages
# name every failing case in full (tinydynamo.course.checking.report).
c.HTMLExporter.template_name = "feedback_wrapped"
c.HTMLExporter.template_file = "wrapped.html.j2"
c.HTMLExporter.extra_template_basedirs = [
    str(pathlib.Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
    str(pathlib.Path(tinydynamo.course.__file__).parent / "templates"),
]
