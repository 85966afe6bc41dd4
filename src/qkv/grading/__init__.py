"""The grader: ``qkv grade`` runs each submission in a bubblewrap sandbox and scores it against the lab's spec.

Modules: ``spec`` (the grading-spec format), ``specs/<lab>.py`` (one per lab), ``sandbox`` (starting the
sandboxed workers), ``child`` (the worker and per-submission child inside the sandbox), ``analysis`` (static
checks of forbidden calls), ``grader`` (the batch: discovery, resume, scoring), ``reports`` (CSV, HTML,
Gradescope), ``gradescope`` (the autograder bundle), ``testing`` (helpers for the specs' planted-bug tests).
"""
