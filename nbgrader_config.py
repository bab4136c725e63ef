"""nbgrader configuration: solutions/ is the instructor's source, assignments/ the release."""
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.course_id = "tinydynamo"

# A learner's notebook may raise, loop forever or print megabytes: none of it may crash grading.
c.Execute.timeout = 300  # seconds per cell
c.Execute.interrupt_on_timeout = True
c.Execute.raise_on_iopub_timeout = False
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 60

# Release notebooks keep no outputs, so regenerating them is byte-identical.
c.ClearOutput.enabled = True
