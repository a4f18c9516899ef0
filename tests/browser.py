"""Real headless Chromium for the tests (Debian's chromium, driven by Playwright; nothing downloaded).

With ONCALLSIM_REQUIRE_BROWSER=1 (set by .ci/run) a missing browser fails the tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = os.environ.get("ONCALLSIM_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def require_browser() -> None:
    if shutil.which(CHROMIUM) is None and not os.path.exists(CHROMIUM):
        message = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("ONCALLSIM_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a test module's browser fixture yields one; each person a context of it)."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def chromium_page(width: int = 1366, height: int = 900) -> Iterator[Any]:
    with chromium() as browser:
        yield browser.new_page(viewport={"width": width, "height": height})
