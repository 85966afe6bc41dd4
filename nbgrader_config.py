"""nbgrader's settings for this course: solutions/ is nbgrader's source folder, labs/ its release folder.

`qkv labs` (src/qkv/labs.py) passes the same settings explicitly; this file lets an instructor run
nbgrader's own commands (generate_assignment, autograde, formgrader) from the repository root.
"""

c = get_config()  # noqa: F821 (provided by nbgrader)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
c.Execute.timeout = 60
