"""One grading spec per lab: ``specs/<lab>.py`` defines ``SPEC = LabSpec(...)``. See README.md here."""
