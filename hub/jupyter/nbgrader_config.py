"""Students' nbgrader settings (the hub image's and the local course's): fetched labs go to ~/labs/<lab>/.

A student's home keeps the course's shape, ``labs/<lab>/`` beside ``chapters/``, so that a lab's "Read first"
link (``../../chapters/<chapter>.ipynb``) opens the chapter (src/qkv/labs.py). nbgrader's Assignments tab changes
into this folder before it lists or fetches, hence it is made here.
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader)
c.Exchange.assignment_dir = os.path.join(os.path.expanduser("~"), "labs")
os.makedirs(c.Exchange.assignment_dir, exist_ok=True)
