"""The grader's words: every text ``qkv grade`` writes for a student or an instructor, as an English template
with named ``{placeholders}`` (``_m(NAME, text)``, the one place each text is written), and the status words.

A template called with its placeholders' values is a message (:class:`.words.Msg`): the grader decides in
messages, results keep them, and a report renders them in its language through :func:`translator`::

    t = translator("zh")
    t(FEEDBACK_TITLE, lab="soft_lookup", student="ada")   # a template filled in: '实验 soft_lookup：ada 的反馈'
    t(PASSED_ALL(checks=CHECKS(n=3)))                      # a message: '通过了全部 3 项检查'
    t.status("timeout")                                    # the status word

The translations live in a gettext catalog like the book's, ``locales/zh_CN/LC_MESSAGES/grader.po`` (translated
with the book's catalogs; English that changed goes fuzzy). ``tools/i18n.py grader`` extracts the templates,
the status words and the texts of every spec (``catalog.catalog_messages``) into it and compiles
``locale/zh_CN/LC_MESSAGES/qkv_grade.mo``, which the wheel ships and the standard library's ``gettext`` reads:
grading needs no Babel. A message that is missing or fuzzy shows in English.

Layer: above ``words`` (how messages are made and rendered); imports only ``words`` and is copied into the
sandbox too (its exceptions carry messages).
"""

from __future__ import annotations

from .words import (
    BY_NAME,
    DOMAIN,
    LANGUAGES,
    LOCALE_DIR,
    STATUS_WORDS,
    TEMPLATES,
    Known,
    Msg,
    Param,
    Template,
    Translator,
    _m,
    translator,
)

__all__ = ["BY_NAME", "DOMAIN", "LANGUAGES", "LOCALE_DIR", "STATUS_WORDS", "TEMPLATES", "Known", "Msg", "Param"]
__all__ += ["Template", "Translator", "translator"]

STATUS_WORDS.update(
    {
        "graded": "graded",
        "malformed": "could not be read as a notebook",
        "timeout": "stopped at the time limit",
        "memory": "ran out of memory",
        "crashed": "stopped early",
        "ambiguous": "several notebooks, none named after the lab",
        "duplicate": "submitted twice (a file and a folder)",
        "wrong_lab": "the notebook of another lab",
    }
)

# --- the student's feedback page (feedback/<student>.html)
FEEDBACK_TITLE = _m("FEEDBACK_TITLE", "Lab {lab}: feedback for {student}")
POINTS = _m("POINTS", "{total} / {maximum} points")
AUTOGRADED = _m("AUTOGRADED", "(autograded)")
AUTOGRADED_AND_BY_HAND = _m("AUTOGRADED_AND_BY_HAND", "(autograded and hand-graded)")
STATUS = _m("STATUS", "Status: {status}.")
STATUS_WITH_NOTE = _m("STATUS_WITH_NOTE", "Status: {status}: {note}.")
NOT_GRADABLE = _m(
    "NOT_GRADABLE", "Your submission could not be graded, so every exercise scores 0. Please ask your instructor."
)
EXERCISE = _m("EXERCISE", "exercise")
POINTS_HEADER = _m("POINTS_HEADER", "points")
FOUND = _m("FOUND", "what the grader found")
BY_HAND = _m("BY_HAND", "graded by hand")
BY_HAND_NOT_YET = _m("BY_HAND_NOT_YET", "graded by hand; not yet graded")
NOT_GRADED = _m("NOT_GRADED", "not graded")
CELL_ERRORS = _m("CELL_ERRORS", "Cells that raised an error when your notebook was run")
CELL_ERRORS_WHY = _m(
    "CELL_ERRORS_WHY", "A failing cell does not stop the others, but a function it should define is then missing."
)

# --- the written questions, for the instructor (manual/<grade_id>.html)
MANUAL_TITLE = _m("MANUAL_TITLE", "{lab}: {grade_id} ({points} points, graded by hand)")
QUESTION = _m("QUESTION", "The question")
MANUAL_HOW = _m(
    "MANUAL_HOW",
    "Enter scores in <code>manual_scores.csv</code> (next to <code>grades.csv</code>, one column per question) "
    "and run <code>qkv grade</code> again: totals then include them.",
)
ANSWERS = _m("ANSWERS", "Answers")
STUDENT = _m("STUDENT", "student")
ANSWER = _m("ANSWER", "answer")
ENTERED = _m("ENTERED", "entered")
NO_ANSWER_FOUND = _m("NO_ANSWER_FOUND", "(no answer found)")
EMPTY_ANSWER = _m("EMPTY_ANSWER", "(empty)")
NOT_ANSWERED = _m("NOT_ANSWERED", "(not answered)")

# --- the class summary, for the instructor (summary.html)
SUMMARY_TITLE = _m("SUMMARY_TITLE", "Lab {lab}: class summary")
SUMMARY_PAGE_TITLE = _m("SUMMARY_PAGE_TITLE", "{lab}: summary")
SUMMARY_RUN = _m("SUMMARY_RUN", "{n} students; seed {seed}; sandbox: {sandbox}.")
NO_SANDBOX = _m("NO_SANDBOX", "none")
STATUS_COUNT = _m("STATUS_COUNT", "{status}: {count}")
PER_ITEM = _m("PER_ITEM", "Per item")
ITEM = _m("ITEM", "item")
FULL_MARKS = _m("FULL_MARKS", "full marks")
MEAN = _m("MEAN", "mean")
COMMON_FAILURE = _m("COMMON_FAILURE", "most common failure")
ITEM_BY_HAND = _m("ITEM_BY_HAND", "{grade_id} (by hand)")
N_ENTERED = _m("N_ENTERED", "{n} entered")
TOTALS = _m("TOTALS", "Totals")
TOTAL = _m("TOTAL", "total")
STATUS_HEADER = _m("STATUS_HEADER", "status")

# --- `qkv check`, printed for a student in a terminal
CHECK_INCOMPLETE = _m("CHECK_INCOMPLETE", "the notebook could not be graded completely: {status}: {note}")
CHECK_ITEM = _m("CHECK_ITEM", "{name}: {points} / {maximum}")
CHECK_NOTE = _m("CHECK_NOTE", "note: {line}")
CHECK_TOTAL = _m("CHECK_TOTAL", "total: {total} / {maximum} autograded points")
CHECK_PLUS_MANUAL = _m("CHECK_PLUS_MANUAL", "(plus {points} points for written answers, graded by hand)")

# --- Gradescope's results.json
GS_STATUS = _m("GS_STATUS", "Status: {status}")
GS_STATUS_WITH_NOTE = _m("GS_STATUS_WITH_NOTE", "Status: {status} ({note})")
GS_CELL_ERRORS = _m("GS_CELL_ERRORS", "Cells that raised an error:")
GS_BY_HAND = _m("GS_BY_HAND", "Written answers ({grade_ids}) are graded by hand.")
GS_NO_BWRAP = _m(
    "GS_NO_BWRAP", "(bubblewrap unavailable here: {why}; graded with resource limits and a separate uid only)"
)
GS_FAILED = _m("GS_FAILED", "The autograder failed before grading; please tell your instructor.")

# --- status notes: why a submission was not graded, or stopped
BOTH_FILE_AND_FOLDER = _m("BOTH_FILE_AND_FOLDER", "both {student}.ipynb and a folder {student}/ were submitted")
NOT_A_FILE = _m("NOT_A_FILE", "the submission is not a regular file")
NO_NOTEBOOK = _m("NO_NOTEBOOK", "no notebook (.ipynb) in the submission folder")
SEVERAL_NOTEBOOKS = _m("SEVERAL_NOTEBOOKS", "{count} notebooks and no single {lab}.ipynb among them")
EMPTY_FILE = _m("EMPTY_FILE", "the file is empty")
TOO_LARGE = _m("TOO_LARGE", "the file is {mb} MB, too large for a notebook")
INVALID_JSON = _m("INVALID_JSON", "not a notebook (invalid JSON: {error})")
NO_CELLS = _m("NO_CELLS", "not a notebook (no list of cells; nbformat 4 is expected)")
UNREADABLE = _m("UNREADABLE", "unreadable: {error}")
WRONG_LAB = _m("WRONG_LAB", "this is a notebook of the lab {other}, not of {lab}")
CELL_STOPPED = _m(
    "CELL_STOPPED",
    "code cell {cell} ({line}) was still running at its time limit of {seconds} s of CPU time (an endless "
    "loop?); the notebook stopped there",
)
STILL_RUNNING = _m("STILL_RUNNING", "the notebook was still running at the time limit (an endless loop?)")
STILL_RUNNING_AT = _m(
    "STILL_RUNNING_AT",
    "the notebook was still running at the time limit (it was running code cell {cell}) (an endless loop?)",
)
OUT_OF_MEMORY = _m("OUT_OF_MEMORY", "some code asked for more memory than a submission may use")
TOO_MUCH_OUTPUT = _m("TOO_MUCH_OUTPUT", "sent far more output than a notebook should")
WORKER_FAILED = _m(
    "WORKER_FAILED", "the grader's worker failed while running this notebook (not the student's doing; run again)"
)
KILLED = _m("KILLED", "the notebook's process ended early (killed by signal {signal})")
EXITED = _m("EXITED", "the notebook's process ended early (exited with status {code})")
SLOW_STOPPED = _m(
    "SLOW_STOPPED",
    "{functions} ran past the time limit of one call (an endless loop?) and was stopped; "
    "only the items that call it lost points",
)
FUNCTION_IN_CELL = _m("FUNCTION_IN_CELL", "{function} (code cell {cell})")
GRADER_ERROR = _m("GRADER_ERROR", "grader error: {error}")
SHELL_SKIPPED = _m("SHELL_SKIPPED", "code cell {cell} runs the shell command {command}, which the grader skips")
MAGIC_SKIPPED = _m("MAGIC_SKIPPED", "code cell {cell} uses the magic {command}, which the grader does not run")
INPUT_ANSWERED = _m(
    "INPUT_ANSWERED", "code cell {cell} calls input(): the grader answers with end of file (nobody types there)"
)
NOTE_AND_NOTE = _m("NOTE_AND_NOTE", "{note}; {why}")
CELL_ERROR = _m("CELL_ERROR", "code cell {cell}: {error}")

# --- one exercise's lines in the feedback
CHECK_LABELLED = _m("CHECK_LABELLED", "check {n} ({label})")
CHECK = _m("CHECK", "check {n}")
ONE_CHECK = _m("ONE_CHECK", "{n} check")
CHECKS = _m("CHECKS", "{n} checks")
PASSED_ALL = _m("PASSED_ALL", "passed all {checks}")
PASSED_ALL_BUT = _m("PASSED_ALL_BUT", "passed all {checks}, but:")
FAILED_SOME = _m("FAILED_SOME", "failed {failed} of {checks}")
ZERO_POINTS = _m("ZERO_POINTS", "0 points: {reason}")
EVERY_CHECK = _m("EVERY_CHECK", "every check: {why}")
CHECK_FAILED = _m("CHECK_FAILED", "{what}: {why}")
NO_RESULT = _m("NO_RESULT", "no result (the notebook stopped, timed out or crashed before this check)")
RAN_PAST = _m("RAN_PAST", "{functions} ran past the time limit")  # a name, maybe with its code cell
RAN_PAST_EARLIER = _m(
    "RAN_PAST_EARLIER",
    "{functions} ran past the time limit of {seconds} s of CPU time earlier, so it was not run again",
)
CALL_TOO_SLOW = _m("CALL_TOO_SLOW", "your code ran past the time limit of one call (an endless loop?): {why}")
CPU_LIMIT = _m("CPU_LIMIT", "ran past the time limit of {seconds} s of CPU time")
CALLED_FORBIDDEN = _m("CALLED_FORBIDDEN", "your code called a function this exercise forbids")
NOT_WRITTEN = _m("NOT_WRITTEN", "not written yet (it still raises NotImplementedError)")
NOT_A_TENSOR_RETURNED = _m(
    "NOT_A_TENSOR_RETURNED", "your function returned something that is not a tensor or a number ({error})"
)
RAISED = _m("RAISED", "your function raised {error}")
UNREADABLE_RESULT = _m("UNREADABLE_RESULT", "the result could not be read")
NO_DEFINITION = _m(
    "NO_DEFINITION", "no definition of {function} was found in your notebook (define it with `def` or `class`)"
)
USES_FORBIDDEN = _m("USES_FORBIDDEN", "uses {names}, which this exercise forbids (it would do the work for you)")
USES_HATCHES = _m(
    "USES_HATCHES", "your notebook uses {names}, which can get around the grader's checks (write the code plainly)"
)

# --- comparing a result with the reference (compare.compare), and the specs' own checks and return-type contracts
THE_RESULT = _m("THE_RESULT", "the result")
VALUE_OF = _m("VALUE_OF", "value {n} of {where}")
WANT_TUPLE_GOT_ONE = _m("WANT_TUPLE_GOT_ONE", "{where} should be a tuple of {count} values; got a single value")
WANT_TUPLE_GOT_N = _m("WANT_TUPLE_GOT_N", "{where} should be a tuple of {count} values; got {got}")
WANT_ONE_GOT_TUPLE = _m("WANT_ONE_GOT_TUPLE", "{where} should be a single tensor; got a tuple of {count} values")
NOT_A_TENSOR = _m("NOT_A_TENSOR", "{where} is not a tensor or a number")
WRONG_SHAPE = _m("WRONG_SHAPE", "{where} has shape {got}; expected {expected}")
NOT_FINITE = _m(
    "NOT_FINITE", "{where} contains NaN or inf where the correct answer is finite (overflow? division by zero?)"
)
WRONG_VALUES = _m("WRONG_VALUES", "{where} is wrong in {bad} of {size} entries (largest error {largest})")
NOT_REPRODUCIBLE = _m(
    "NOT_REPRODUCIBLE",
    "two calls with the same seed gave different results: draw from a generator seeded with `seed`",
)
SAME_DRAWS = _m(
    "SAME_DRAWS",
    "at d_k = 1 the scaled and unscaled {stat} differ: measure both on the same draws (draw q and k once for each d_k)",
)
TRAINED_TOO_LITTLE = _m(
    "TRAINED_TOO_LITTLE",
    "after training, the model reverses {accuracy} of the tokens of new sequences correctly; it needs {threshold}",
)
WANT_PYTHON_FLOAT = _m("WANT_PYTHON_FLOAT", "TypeError: return a Python float (use .item()); got {got}")
WANT_BOOL_MASK = _m("WANT_BOOL_MASK", "TypeError: a mask is a boolean tensor (dtype torch.bool); got {got}")
WANT_FLOAT = _m("WANT_FLOAT", "TypeError: return a float tensor (use .float()); got {got}")
WANT_FLOAT32 = _m("WANT_FLOAT32", "TypeError: return a float32 tensor (compute in float64, then .float()); got {got}")
WANT_INTEGER = _m("WANT_INTEGER", "TypeError: return an integer tensor of counts; got {got}")

# What the sandbox's exceptions may carry back (a function retired at its time limit, a broken contract): the
# grader accepts only these from the child.
CHILD_SAYS = frozenset(
    t.name for t in (RAN_PAST_EARLIER, WANT_PYTHON_FLOAT, WANT_BOOL_MASK, WANT_FLOAT, WANT_FLOAT32, WANT_INTEGER)
)
