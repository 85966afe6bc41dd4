"""Several nbgrader command lines in one Python process, each run as ``python -m nbgrader ARGS`` runs it (through
nbgrader's own application), so that nbgrader's start-up, about 2 s of imports, is paid once and not per line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def run(commands: Sequence[Sequence[str]], cwd: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``commands`` (nbgrader's arguments, one list per command line) in order in one child process; it stops
    at the first that fails, with that exit status. nbgrader runs ``alembic`` from PATH: this Python's is first."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = [sys.executable, "-m", "qkv.nbgrader_cli", json.dumps([list(c) for c in commands])]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def main(commands: list[list[str]]) -> int:
    from jupyter_core.application import NoStart
    from nbgrader.apps.nbgraderapp import NbGraderApp

    for args in commands:
        app = NbGraderApp.instance()
        try:
            app.initialize(args)
            app.start()
        except NoStart:  # what a finished subcommand raises; jupyter's launch_instance catches it the same way
            pass
        except SystemExit as stop:  # nbgrader's `fail` exits; the next line must not run on a failed one
            if stop.code:
                print(f"nbgrader {' '.join(args)} exited with {stop.code}", file=sys.stderr)
                return stop.code if isinstance(stop.code, int) else 1
        finally:  # both are singletons: the next line gets a fresh application, as a new process would
            if app.subapp is not None:
                type(app.subapp).clear_instance()
            NbGraderApp.clear_instance()
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
