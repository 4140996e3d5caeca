"""Browser-test fixtures: daphne serving the test database in a subprocess, and headless Chromium (Selenium)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
CHROMEDRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401 - the probe the browser tests read (tests.browser.selenium is None without it)
except ImportError:  # pragma: no cover
    selenium = None

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_database_url() -> str:
    """The running test database, as a DATABASE_URL for a server in another process."""
    from django.conf import settings
    from django.db import connection

    parts = urlsplit(settings.DATABASE_URL)
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


test_database_url.__test__ = False  # a helper, not a test


def server_env(**overrides: str) -> dict[str, str]:
    """The environment of a platform process (daphne, a Celery worker, scripts/serve.py) on the test database.

    This process's environment without the LLM and Redis settings, extractive answers and inline
    ingestion, then ``overrides``.
    """
    from django.conf import settings

    env = {k: v for k, v in os.environ.items() if not k.startswith("ZHIKU_LLM_") and k != "REDIS_URL"}
    env.update({
        "DATABASE_URL": test_database_url(), "DJANGO_SECRET_KEY": settings.SECRET_KEY, "ZHIKU_INGEST_MODE": "sync",
        "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING",
        # The pages are tested on the judge's verdicts (each badge, sentence and share); the reader's own decisions
        # are tested in tests/knowledge/reader/ through search, the API and chat.
        "ZHIKU_READER": "false", **overrides,
    })
    return env


server_env.__test__ = False


@contextmanager
def daphne(log: Path, *, port: int | None = None, **env_overrides: str):
    """daphne serving config.asgi on ``port`` (default: a free one) against the test database; yields its base URL.

    Extractive answers (no LLM), no Redis and inline ingestion unless ``env_overrides`` say otherwise.
    """
    port = port or free_port()
    env = server_env(DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost", **env_overrides)
    with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
    if proc.poll() is not None:
        pytest.fail("daphne did not start:\n" + log.read_text(errors="replace"))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def server(tmp_path_factory, django_db_setup):
    """daphne serving config.asgi on a free port against the test database (extractive answers, no LLM).

    One per test process (each xdist worker): starting it costs seconds. Each test's rows are still its own (the
    browser tests are transactional, so the tables are emptied after each, and ids are never reused); what the
    server keeps in memory is keyed by those ids and the KBs' versions.
    """
    with daphne(tmp_path_factory.mktemp("daphne") / "daphne.log") as url:
        yield url


def chromium(*, network_log: bool = False, console_log: bool = False):
    """Headless Chromium (Selenium), asking for Chinese; with ``network_log``, recording the DevTools network log;
    with ``console_log``, keeping the pages' console messages (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(arg)
    # Chinese, as a user in China would ask for it (headless Chromium otherwise sends en-US and
    # the pages answer in English); an English test sets the django_language cookie.
    options.add_argument("--lang=zh-CN")
    options.add_experimental_option("prefs", {"intl.accept_languages": "zh-CN,zh"})
    logs = {**({"performance": "ALL"} if network_log else {}), **({"browser": "ALL"} if console_log else {})}
    if logs:
        options.set_capability("goog:loggingPrefs", logs)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return driver


@pytest.fixture
def browser():
    driver = chromium()
    yield driver
    driver.quit()


def Wait(driver, timeout: float, **options):  # noqa: N802 - named like the WebDriverWait it returns
    """A WebDriverWait that tries again when the page re-rendered the element it was reading: a stale
    reference mid-render is a moment of the page, not a failure (CI met one after a language switch)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    options.setdefault("ignored_exceptions", (NoSuchElementException, StaleElementReferenceException))
    return WebDriverWait(driver, timeout, **options)


def open_as(browser, server: str, user, path: str) -> None:
    """Open ``path`` in ``browser`` signed in as ``user`` (a session made by the test client, no login form).

    The cookie is set on a static file of the server first: a browser takes cookies only for the page's host.
    """
    from django.test import Client

    client = Client()
    client.force_login(user)
    browser.get(server + "/static/zhiku/console.css")
    browser.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})
    browser.get(server + path)




def watch_csp(driver) -> None:
    """From the next page on, every Content-Security-Policy violation is kept in ``window.__csp``.

    The listener is added by DevTools before any page script runs, so the page's own policy does not apply to it.
    """
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__csp = [];
        document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(
            {directive: e.effectiveDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber,
             sample: e.sample}));
    """})


def csp_violations(driver) -> list[dict]:
    """The violations the current page has reported so far (see ``watch_csp``)."""
    return driver.execute_script("return window.__csp || []")
