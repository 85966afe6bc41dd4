"""Fixtures for the browser tests; the machinery is in browser_support.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_support import CHROMIUM, CHROMIUM_FLAGS, VIEWPORT, refuse_outside


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory):
    """One Chromium per test module (pytest-xdist's loadscope keeps a module on one worker), fresh profile."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} not found: install Debian's chromium (`make system`), or set QKV_CHROMIUM", pytrace=False
        )
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport=VIEWPORT,
            ignore_default_args=["--enable-automation"],
            service_workers="block",
        )
        context.route("**/*", refuse_outside)
        context.set_default_timeout(60_000)
        try:
            yield context
        finally:
            context.unroute_all(behavior="ignoreErrors")
            context.close()
    shutil.rmtree(profile, ignore_errors=True)
