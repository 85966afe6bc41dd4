"""The grader: ``qkv grade`` runs each submission in a bubblewrap sandbox and scores it against the lab's spec.

In layers, each importing only those below it (``tests/grading/test_layers.py`` holds the order and checks it):

* the sandbox side, copied into the sandbox and importing only itself: ``events`` (the child's messages to the
  grader) and ``protocol`` (the one wire framing), used by both ends; ``tripwires`` and ``limits``, ``child`` (runs
  one submission), ``worker`` (forks a child per job);
* the authoring format: ``spec`` and ``specs/<lab>.py`` (adding a lab's spec is copying one file);
* helpers: ``analysis`` (forbidden calls in the student's source), ``atomic`` (files written whole),
  ``bwrap`` (the bubblewrap command), ``compare`` (results against the reference), ``fingerprint`` (the cache
  key), ``results`` (typed results and their JSON), ``sandbox`` (the lib a worker sees, the worker process);
* ``messages`` (the grader's words: templates, made into messages and rendered in English or Chinese by ``words``), ``lab`` (the lab, checked against its solution);
* ``submissions`` (finding and parsing notebooks), ``scoring`` (answers into item results), ``gradescope``
  (the autograder bundle);
* ``batch`` (jobs, the worker pool, the cache), ``reports`` (CSV, HTML, Gradescope's JSON);
* ``command`` (``qkv grade``, ``qkv gradescope-bundle`` and ``run_batch``, wiring the layers), then ``testing``
  (helpers for the specs' planted-bug tests).
"""
