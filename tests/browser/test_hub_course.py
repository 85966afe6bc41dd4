"""The JupyterHub course walked in Chromium, as its users walk it (`make test-hub`; root only: it creates users).

`hub/course_hub.py setup` makes the course (real users, passwords, the exchange, the instructor's course from
`nbgrader quickstart` and `qkv course init`); JupyterHub 5.5.0 with configurable-http-proxy and PAM login serves
it on 127.0.0.1. The instructor releases soft_lookup (nbgrader, as the instructor user); each student logs in
in the browser, fetches the lab in nbgrader's Assignments tab (into ~/labs/, beside ~/chapters/), opens it, opens
the chapter from its "Read first" link, writes answers (all, one, none), runs every cell, runs Validate, runs
`qkv check` (as the student), and submits from the Assignments tab. A student
cannot read another's work. The instructor collects, grades with `qkv grade`, and releases qkv's feedback pages
through nbgrader; each student fetches the feedback in the Assignments tab and reads it in the browser. The hub,
the proxy and every user's server are stopped at the end, and no process of the course's users is left.
"""

from __future__ import annotations

import csv
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from browser_support import REPO, SCREENSHOTS

sys.path.insert(0, str(REPO / "hub"))
import course_hub as H
from lab_server import free_port

pytestmark = [pytest.mark.browser, pytest.mark.hub]

LAB = H.LABS[0]
START_S = 300  # the hub, or one user's server, on two busy cores
RUN_S = 240  # every cell of the lab, torch's import included
MS = 1000


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _processes_of(uids: set[int]) -> list[int]:
    """The running processes of `uids`. An exited one (a zombie: its kernel quit after the hub) is not running; it
    waits for whichever init the machine has to reap it, which the test cannot hurry."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid in uids:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    out.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:300]
    except OSError:
        return "(gone)"


def _stop(pid: int, timeout: float) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def hub():
    """The course and its hub; yields (base URL, state folder, passwords). Stops everything after, then fails if a
    process of the course's users or the proxy outlived the hub."""
    if os.geteuid() != 0:
        pytest.fail("the hub test creates local users: run it as root (CI does), e.g. `sudo make test-hub`")
    state = Path(tempfile.mkdtemp(prefix="qkv-hub-"))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, str(REPO / "hub" / "course_hub.py"), "setup", str(state), "--home-root", str(state / "home")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    passwords = json.loads((state / "users.json").read_text())
    uids = {int(os.stat(state / "home" / name).st_uid) for name in passwords}
    port = free_port()
    env.update(
        QKV_HUB_STATE=str(state),
        QKV_HUB_PORT=str(port),
        QKV_HUB_INTERNAL_PORT=str(free_port()),
        QKV_HUB_PROXY_API_PORT=str(free_port()),
        QKV_HUB_API_TOKEN=secrets.token_hex(24),
    )
    log = open(state / "hub.log", "wb")
    server = subprocess.Popen(
        [str(H.HUB_VENV / "bin" / "jupyterhub"), "-f", str(REPO / "hub" / "jupyterhub_config.py")],
        cwd=state,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_S
        while not _answers(f"{base}hub/api/"):
            assert server.poll() is None, f"the hub exited:\n{(state / 'hub.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no hub after {START_S} s:\n{(state / 'hub.log').read_text()[-3000:]}"
            time.sleep(0.5)
        yield base, state, passwords
    finally:
        proxy = (state / "proxy.pid").read_text().strip() if (state / "proxy.pid").exists() else ""
        server.terminate()  # the hub stops every user's server, then the proxy
        try:
            server.wait(timeout=300)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        # A kernel whose server stopped quits by itself once it sees its parent gone (ipykernel polls for that): a
        # minute for that on a busy machine, then whatever still runs is left over.
        deadline = time.monotonic() + 60
        while _processes_of(uids) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _processes_of(uids) + ([int(proxy)] if proxy and Path(f"/proc/{proxy}").exists() else [])
        described = {pid: _command_line(pid) for pid in left}
        for pid in left:
            _stop(pid, 10)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(state / "hub.log", SCREENSHOTS / "hub.log")  # kept for a failed run's reader
        shutil.rmtree(state, ignore_errors=True)
        assert not left, f"processes left after the hub stopped: {described}"


def as_user(name: str, state: Path, *command: str, cwd: Path) -> subprocess.CompletedProcess:
    done = H.as_user(name, state, list(command), cwd=cwd)
    assert done.returncode == 0, f"{' '.join(command)} as {name}: {done.returncode}\n{done.stdout}{done.stderr}"
    return done


def answers() -> dict[int, str]:
    """The answer of each exercise cell of the lab (code, and the written answers in Markdown), as a student who
    solved it would type it: the solution notebook's cell without nbgrader's solution markers (cell indices are
    the release's: nbgrader keeps cells)."""
    notebook = json.loads((REPO / "solutions" / LAB / f"{LAB}.ipynb").read_text())
    out = {}
    for index, cell in enumerate(notebook["cells"]):
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):  # an exercise's code, or a written answer (Markdown)
            lines = "".join(cell["source"]).splitlines()
            out[index] = "\n".join(
                line for line in lines if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
    return out


CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"
# The chapter the lab links ("Read first"): its first heading, the chapter notebook's title.
CHAPTER_TITLE = json.loads((REPO / "chapters" / f"{LAB}.ipynb").read_text())["cells"][0]["source"][0].strip("# \n")
ALL_RAN_JS = r"""
() => {
  const cells = Array.from(document.querySelectorAll(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell"));
  const indicator = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator");
  return cells.length > 0 && cells.every((c) => /^\[\d+\]:$/.test(c.querySelector(".jp-InputPrompt").textContent.trim()))
    && indicator && indicator.getAttribute("data-status") === "idle";
}
"""


def open_assignments(page):
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Nbgrader$")).click()
    page.locator(".lm-Menu-item", has_text="Assignment List").click()
    page.wait_for_selector("#released_assignments_list", timeout=60 * MS)


def button(page, where: str, label: str):
    return page.locator(f"{where} button", has_text=re.compile(f"^{label}$"))


def log_in(page, base: str, name: str, password: str) -> str:
    page.context.clear_cookies()  # the students share one browser: nobody is logged in as the last one
    page.goto(f"{base}hub/login", wait_until="load")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(rf"/user/{name}/lab"), timeout=START_S * MS)
    page.wait_for_selector(".jp-LabShell", timeout=START_S * MS)
    return f"{base}user/{name}/"


def save(page) -> None:
    """File > Save, then wait until the notebook's tab no longer shows unsaved changes (two saves in flight at once
    make JupyterLab ask whether to overwrite the file)."""
    # Save acts on JupyterLab's current widget, which only a click or a keystroke in it makes current.
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab[title*='labs/']", has_text=f"{LAB}.ipynb").click()
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^File$")).click()
    page.locator('.lm-Menu-item[data-command="docmanager:save"]').click()  # Ctrl+S needs the focus in the page
    page.wait_for_function(
        "() => !document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
        timeout=120 * MS,
        polling=250,
    )


def wait_for_kernel(page, user_url: str, path: str) -> None:
    """The server says the notebook's kernel is idle with the page connected (Run All before that runs nothing)."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        for session in page.request.get(f"{user_url}api/sessions").json():
            kernel = session.get("kernel") or {}
            if session.get("path") == path and kernel.get("execution_state") == "idle" and kernel.get("connections"):
                return
        page.wait_for_timeout(250)  # not time.sleep: Playwright's router only runs inside its calls
    raise AssertionError(f"the kernel of {path} never became idle")


CHAPTER_TAB = ".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current[title*='chapters/']"


def read_first(page) -> None:
    """Click the lab's "Read first" link: JupyterLab opens the chapter beside the labs (~/chapters) in a new tab,
    whose notebook shows the chapter's title; then close that tab, back to the lab."""
    link = page.locator(f"{CELLS} a", has_text=CHAPTER_TITLE).first
    # JupyterLab shows a relative link resolved from the lab's folder (labs/<lab>/), as a URL under the user's root.
    assert urlsplit(link.get_attribute("href")).path.endswith(f"/files/chapters/{LAB}.ipynb"), link.get_attribute(
        "href"
    )
    link.click()
    chapter_tab = page.locator(CHAPTER_TAB)
    chapter_tab.wait_for(timeout=120 * MS)
    heading = re.compile("^" + re.escape(CHAPTER_TITLE))  # not the lab's "Lab: attention as a soft lookup"
    page.locator(f"{CELLS} h1", has_text=heading).first.wait_for(timeout=120 * MS)
    # Read, not changed: JupyterLab may still mark the chapter changed (its kernel's metadata), and then asks on close.
    chapter_tab.locator(".lm-TabBar-tabCloseIcon").click()
    page.wait_for_function(
        f"() => !document.querySelector({CHAPTER_TAB!r}) || document.querySelector('.jp-Dialog')", timeout=60 * MS
    )
    if page.locator(".jp-Dialog").count():
        page.locator(".jp-Dialog button", has_text=re.compile(r"^Discard$")).click()
    chapter_tab.wait_for(state="detached", timeout=60 * MS)


def work_the_lab(page, user_url: str, solved: dict[int, str]) -> str:
    """Open the fetched lab, open its chapter from the "Read first" link, type the answers in `solved`, save, run
    every cell, Validate; the validation's text."""
    page.goto(f"{user_url}lab/tree/labs/{LAB}/{LAB}.ipynb", wait_until="load")
    page.wait_for_selector(CELLS, timeout=START_S * MS)
    read_first(page)
    for index, code in solved.items():
        cell = page.locator(CELLS).nth(index)
        if "jp-MarkdownCell" in (cell.get_attribute("class") or ""):
            cell.dblclick()  # a rendered Markdown cell opens its editor on a double click
        editor = cell.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(code)
    page.keyboard.press("Escape")
    save(page)
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator')"
        "?.getAttribute('data-status') === 'idle'",
        timeout=START_S * MS,
    )
    wait_for_kernel(page, user_url, f"labs/{LAB}/{LAB}.ipynb")
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(ALL_RAN_JS, timeout=RUN_S * MS, polling=500)
    save(page)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button").click()
    dialog = page.locator(".jp-Dialog")
    page.wait_for_function(
        "() => /passes all the tests|failed|error/i.test(document.querySelector('.jp-Dialog')?.innerText || '')",
        timeout=RUN_S * MS,
        polling=500,
    )
    text = dialog.inner_text()
    dialog.locator("button").last.click()
    return text


def test_course_on_the_hub(hub, browser_context):
    base, state, passwords = hub
    home = state / "home"
    course = home / H.INSTRUCTOR / H.COURSE_ID
    solutions = answers()
    first = dict(list(solutions.items())[:1])
    work = {H.STUDENTS[0]: solutions, H.STUDENTS[1]: first, H.STUDENTS[2]: {}}
    (SCREENSHOTS / "hub").mkdir(parents=True, exist_ok=True)

    as_user(H.INSTRUCTOR, state, "nbgrader", "generate_assignment", LAB, "--force", cwd=course)
    as_user(H.INSTRUCTOR, state, "nbgrader", "release_assignment", LAB, cwd=course)

    for name in H.STUDENTS:
        page = browser_context.new_page()
        try:
            user_url = log_in(page, base, name, passwords[name])
            open_assignments(page)
            button(page, "#released_assignments_list", "Fetch").click()
            button(page, "#fetched_assignments_list", "Submit").wait_for(timeout=120 * MS)
            assert (home / name / "labs" / LAB / f"{LAB}.ipynb").is_file()  # hub/jupyter/nbgrader_config.py

            validation = work_the_lab(page, user_url, work[name])
            if work[name] == solutions:
                assert "Success! Your notebook passes all the tests." in validation, validation
            else:
                assert "The following cell failed:" in validation, validation

            # qkv check as the student sees it: no solutions/ anywhere, the package's records and specs.
            check = as_user(name, state, "qkv", "check", LAB, f"{LAB}.ipynb", cwd=home / name / "labs" / LAB)
            total = re.search(r"^total: (\S+) / (\S+) autograded points$", check.stdout, re.M)
            assert total, check.stdout[-2000:]
            scored, most = float(total.group(1)), float(total.group(2))
            assert scored == most if work[name] == solutions else scored < most, total.group(0)

            page.goto(f"{user_url}lab", wait_until="load")
            page.wait_for_selector(".jp-LabShell", timeout=START_S * MS)
            open_assignments(page)
            button(page, "#fetched_assignments_list", "Submit").click()
            button(page, "#submitted_assignments_list", "Fetch Feedback").wait_for(timeout=120 * MS)
            page.screenshot(path=str(SCREENSHOTS / "hub" / f"{name}-submitted.png"))
        finally:
            page.close()

    # Two students cannot read each other's work: not the home, not the exchange's list of submissions.
    other = home / H.STUDENTS[0] / "labs" / LAB / f"{LAB}.ipynb"
    inbound = state / "exchange" / H.COURSE_ID / "inbound"
    for target, call in ((other, "open"), (inbound, "os.listdir")):
        probe = H.as_user(H.STUDENTS[1], state, ["python", "-c", f"import os; {call}({str(target)!r})"], cwd=home)
        assert probe.returncode == 1 and "PermissionError" in probe.stderr, (target, probe.stderr)

    as_user(H.INSTRUCTOR, state, "nbgrader", "collect", LAB, cwd=course)
    as_user(
        H.INSTRUCTOR,
        state,
        "qkv",
        "grade",
        LAB,
        "submitted",
        "--out",
        f"grades/{LAB}",
        "--course",
        str(REPO),
        "--quiet",
        cwd=course,
    )
    with open(course / "grades" / LAB / "grades.csv", newline="") as f:
        grades = {row["student"]: row for row in csv.DictReader(f)}
    assert set(grades) == set(H.STUDENTS)
    top = float(grades[H.STUDENTS[0]]["max_total"])
    assert float(grades[H.STUDENTS[0]]["total"]) == top > 0  # the solution's answers: every point
    assert 0 < float(grades[H.STUDENTS[1]]["total"]) < top and float(grades[H.STUDENTS[2]]["total"]) == 0
    # qkv's feedback pages, released through nbgrader (its layout: feedback/<student>/<lab>/<notebook>.html,
    # next to the submission's timestamp and secret), by the instructor.
    publish = (
        "import shutil, sys; from pathlib import Path\n"
        "lab, students = sys.argv[1], sys.argv[2:]\n"
        "for s in students:\n"
        "    dest = Path('feedback', s, lab); dest.mkdir(parents=True, exist_ok=True)\n"
        "    shutil.copy(Path('grades', lab, 'feedback', s + '.html'), dest / (lab + '.html'))\n"
        "    for f in ('timestamp.txt', 'submission_secret.txt'):\n"
        "        shutil.copy(Path('submitted', s, lab, f), dest / f)\n"
    )
    as_user(H.INSTRUCTOR, state, "python", "-c", publish, LAB, *H.STUDENTS, cwd=course)
    as_user(H.INSTRUCTOR, state, "nbgrader", "release_feedback", LAB, cwd=course)

    for name in H.STUDENTS:
        page = browser_context.new_page()
        try:
            user_url = log_in(page, base, name, passwords[name])
            open_assignments(page)
            button(page, "#submitted_assignments_list", "Fetch Feedback").click()
            page.locator("#submitted_assignments_list", has_text="(view feedback)").wait_for(timeout=120 * MS)
            (html,) = (home / name / "labs" / LAB / "feedback").glob(f"*/{LAB}.html")
            page.goto(f"{user_url}files/{quote(str(html.relative_to(home / name)))}", wait_until="load")
            shown = page.inner_text("body")
            assert f"{float(grades[name]['total']):g}" in shown and LAB in shown, shown[:500]
            page.screenshot(path=str(SCREENSHOTS / "hub" / f"{name}-feedback.png"), full_page=True)
        finally:
            page.close()
