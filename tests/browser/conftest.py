"""The back office in a real browser: Debian's chromium, headless, driven by Selenium through
Debian's chromedriver (both from `make browser`; nothing is downloaded at test time), one
browser for the whole test process, against pytest-django's live server on the test
database. Screenshots go to var/screenshots/ (docs/screenshots/ holds the README's copies)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "var" / "screenshots"
CHROMIUM = os.environ.get("LEDGER_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("LEDGER_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for binary in (CHROMIUM, CHROMEDRIVER):
        assert shutil.which(binary), f"{binary} is missing: `make browser` installs Debian's chromium and chromium-driver"
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager never fetches a driver or a browser
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1440,1100", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions", "--lang=en-US"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console, for tests that require no script error
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


class Page:
    """The browser on the live server, with the steps the tests take."""

    def __init__(self, driver, base_url: str):
        self.driver, self.base = driver, base_url.rstrip("/")

    def open(self, path: str) -> "Page":
        self.driver.get(self.base + path)
        return self

    def find(self, css: str, timeout: float = 15.0):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))

    def all(self, css: str) -> list:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self) -> str:
        return self.find("body").text

    def click(self, css: str) -> None:
        """Click; when the click loads another page, wait until it has."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        old = self.find("html")
        self.find(css).click()
        try:
            WebDriverWait(self.driver, 30.0).until(ec.staleness_of(old))
        except TimeoutException:
            pass  # it did not load a page
        self.find("body")

    def fill(self, css: str, value: str) -> None:
        field = self.find(css)
        field.clear()
        field.send_keys(value)

    def choose(self, css: str, *, value: str | None = None, label: str | None = None) -> None:
        from selenium.webdriver.support.ui import Select

        select = Select(self.find(css))
        select.select_by_value(value) if value is not None else select.select_by_visible_text(label)

    def options(self, css: str) -> list[str]:
        from selenium.webdriver.support.ui import Select

        return [o.get_attribute("value") for o in Select(self.find(css)).options]

    def sign_in(self, username: str, password: str) -> str:
        """Sign out whoever is signed in, sign in through the form; the page's text after.

        chromedriver can lose the page's context while the answer replaces the form on a
        loaded machine ("unhandled inspector error: Cannot find context"): signing in is
        repeatable, so it is tried again (at most three times) instead of failing the test."""
        from selenium.common.exceptions import WebDriverException

        for _ in range(2):
            try:
                return self._sign_in(username, password)
            except WebDriverException:
                continue
        return self._sign_in(username, password)

    def _sign_in(self, username: str, password: str) -> str:
        self.driver.delete_all_cookies()
        self.open("/admin/login/?next=/admin/")
        self.fill("#id_username", username)
        self.fill("#id_password", password)
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        before = self.driver.find_element(By.TAG_NAME, "html")
        self.click("input[type=submit]")
        # The answer is a new document: wait for the form's page to go before reading, or
        # the read can land on the old page while it is being replaced.
        WebDriverWait(self.driver, 20).until(expected_conditions.staleness_of(before))
        self.find("#content")
        return self.text()

    def run_action(self, action: str, *, rows: list[str] | None = None) -> str:
        """On a change list: tick ``rows`` (object ids; all when None), choose ``action``,
        Go; returns the confirmation page's text."""
        for box in self.all("input.action-select"):
            if rows is None or box.get_attribute("value") in rows:
                box.click()  # a checkbox: no page load
        self.choose("select[name=action]", value=action)
        self.click("button[name=index]")
        self.find("#confirm-action")
        return self.text()

    def wait_text_in(self, css: str, wanted: str | tuple[str, ...], *, timeout: float = 60.0) -> str:
        """The text of the element at ``css`` once it shows ``wanted`` (or one of them),
        reloading meanwhile: the status of one record. Never wait for a word anywhere on the
        page: it often shows the same word for another record (a data source's creation
        transaction is CONFIRMED long before the evaluation a test triggered), and the wait
        then ends before the work it waits for."""
        wanted = (wanted,) if isinstance(wanted, str) else wanted
        deadline = time.monotonic() + timeout
        while True:
            found = self.all(css)
            text = found[0].text if found else ""
            if any(w in text for w in wanted):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{wanted!r} did not appear in {css!r} within {timeout}s; it says: {text[:500]!r} ({len(found)} found)")
            time.sleep(1.0)
            self.driver.refresh()

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        assert path.stat().st_size > 10_000, f"{path} looks empty"
        return path


@pytest.fixture
def page(browser, live_server) -> Page:
    return Page(browser, live_server.url)
