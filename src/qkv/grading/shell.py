"""The ``get_ipython()`` of the sandbox: a minimal IPython shell for the magics a notebook uses.

Layer: sandbox side, above ``protocol``; runs inside the sandbox, imports only the standard library and ``events``
(its notes are messages to the grader). The grader turned each cell into Python with IPython's own transformer (``magics.py``); that Python calls
this shell. Magics that run code (``%time``, ``%timeit``, ``%%timeit``; ``%%time``, ``%%capture`` run their body
inline) run it in the notebook's namespace, once, with nothing printed; display and set-up magics
(``%matplotlib``, ``%config``, ``%load_ext``, ...) do nothing; shell commands (``!pip``, ``%pip``, ``%%bash``) and
``input()`` are not run but noted, for the feedback.
"""

from __future__ import annotations

import shlex

from .events import MAX_NAME, Note, Send

QUIET = frozenset(  # nothing to do here: display, set-up, help, introspection
    "matplotlib config load_ext reload_ext unload_ext autoreload aimport precision xmode pdb who whos who_ls pwd "
    "history lsmagic magic pinfo pinfo2 psource pdoc pdef pfile quickref env colors automagic autocall "
    "html HTML markdown latex javascript js svg".split()
)
SHELL = frozenset("pip conda mamba micromamba sx system sc bash sh script perl ruby cd run".split())
TIMEIT_FLAGS = frozenset("-n -r -p".split())  # options of %timeit that take a value


class NoInput(EOFError):
    """``input()`` in the sandbox: nobody is there to type (an ``EOFError``, as at the end of a file)."""


class Captured:
    """``%%capture out``'s ``out``: nothing printed in the sandbox is kept."""

    stdout = stderr = ""
    outputs = ()

    def show(self) -> None:
        return None

    __call__ = show


class Shell:
    """``get_ipython()`` for the cells of one notebook: ``ns`` its namespace, ``send`` the channel for notes,
    ``cell`` the index of the cell now running (set by the child)."""

    def __init__(self, ns: dict, send: Send) -> None:
        self.ns, self.send, self.cell = ns, send, 0

    def __call__(self) -> Shell:  # the notebook calls get_ipython()
        return self

    def __getattr__(self, name: str):  # anything else of IPython's (events, kernel, display_pub): does nothing
        return _Nothing()

    def note(self, kind: str, text: str) -> None:
        self.send(Note(self.cell, kind, text[:MAX_NAME]))

    def _run(self, source: str, expression: bool = False):
        filename = f"<cell {self.cell + 1}>"
        if expression:
            try:
                code = compile(source, filename, "eval")
            except SyntaxError:
                pass
            else:
                return eval(code, self.ns)
        exec(compile(source, filename, "exec"), self.ns)
        return None

    def run_line_magic(self, name: str, line: str):
        if name == "time":
            return self._run(line, expression=True)
        if name == "timeit":  # once, in a scope of its own (as IPython's timing function): its names do not stay
            exec(compile(_timeit_statement(line), f"<cell {self.cell + 1}>", "exec"), self.ns, {})
            return None
        if name in SHELL:
            self.note("shell", f"%{name} {line}".strip())
        elif name not in QUIET:
            self.note("magic", f"%{name}")
        return None

    def begin_cell_magic(self, name: str, line: str) -> None:
        """A cell magic whose body follows as code (``%%time``, ``%%capture [out]``)."""
        words = line.split()
        if name == "capture" and words and not words[-1].startswith("-"):
            self.ns[words[-1]] = Captured()

    def run_cell_magic(self, name: str, line: str, body: str):
        if name == "timeit":  # the body runs in a scope of its own, as in IPython: its names do not stay
            setup = _timeit_statement(line)
            scope: dict = {}
            filename = f"<cell {self.cell + 1}>"
            exec(compile(setup + "\n", filename, "exec"), self.ns, scope)
            exec(compile(body, filename, "exec"), self.ns, scope)
        elif name in ("writefile", "file"):
            words = shlex.split(line)
            with open(words[-1], "a" if "-a" in words else "w", encoding="utf-8") as f:
                f.write(body)
        elif name in SHELL:
            self.note("shell", f"%%{name} {line}".strip())
        elif name not in QUIET:
            self.note("magic", f"%%{name}")
        return None

    def system(self, command: str) -> None:
        self.note("shell", f"!{command}")

    def getoutput(self, command: str) -> list:
        self.note("shell", f"!{command}")
        return []

    def input(self, prompt: object = "") -> str:
        self.note("input", str(prompt))
        raise NoInput("EOF when reading a line")


class _Nothing:
    """What an unknown part of the shell gives: callable, with any attribute, doing nothing."""

    def __call__(self, *args, **kwargs):
        return None

    def __getattr__(self, name: str):
        return self


def _timeit_statement(line: str) -> str:
    """The statement of ``%timeit [options] statement`` (``-n 10 -r 3 f(x)`` -> ``f(x)``)."""
    words = line.split(" ")
    while words and words[0].startswith("-"):
        flag = words.pop(0)
        if flag in TIMEIT_FLAGS and words:
            words.pop(0)
    return " ".join(words).strip() or "pass"
