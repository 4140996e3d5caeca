"""End to end in headless Chromium: the platform served live (daphne on the test database) and a page of ANOTHER
origin (a tiny http.server) carrying the embed snippet. The bubble opens the chat, a question gets a cited answer;
the same page from an origin not listed gets no chat and cannot call the stream. And a share link's page."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from assistants.services import assistant_update
from chat.models import Channel, Conversation, Feedback
from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, selenium, watch_csp

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

HOST_PAGE = """<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>示例公司帮助中心</title></head>
<body><h1>示例公司帮助中心</h1><p>有问题？点右下角的对话按钮，问问我们的产品助手。</p>
<script src="{server}/embed/{id}.js" defer></script>
</body></html>
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test's output is not the place for an access log
        pass


@contextmanager
def other_site(directory):
    """A static site on a port of its own: another origin than the platform's."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


def wait_ready(browser) -> None:
    """Until the chat page's script has set up its handlers (it marks ``body[data-ready]``)."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    Wait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "body[data-ready]"))


def ask_in(browser, question: str):
    """Type ``question`` into the visitor chat of the current frame or page; the answer once it has finished."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    ended = ".vc-msg.assistant .vc-feedback:not([hidden]), .vc-msg.assistant .vc-error"
    wait_ready(browser)
    box = browser.find_element(By.ID, "vc-question")
    before = len(browser.find_elements(By.CSS_SELECTOR, ended))
    box.send_keys(question)
    browser.find_element(By.ID, "vc-send").click()
    Wait(browser, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ended)) > before)
    return browser.find_elements(By.CSS_SELECTOR, ".vc-msg.assistant")[-1]


def test_the_bubble_answers_on_a_listed_site_and_nothing_shows_on_another(server, browser, assistant, alice, docs_kb,
                                                                          tmp_path):
    # long because: one browser session walks the listed page, then the same page from an origin not listed
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    with other_site(tmp_path) as port:
        listed = f"http://localhost:{port}"
        assistant_update(assistant=assistant, user=alice, allowed_origins=[listed],
                         opening_message="您好！我是产品助手，可以回答价格与安装问题。",
                         suggested_questions=["知库专业版的价格是多少？", "安装需要什么环境？"])
        (tmp_path / "index.html").write_text(HOST_PAGE.format(server=server, id=assistant.pk), encoding="utf-8")

        watch_csp(browser)
        browser.get(listed + "/index.html")
        bubble = Wait(browser, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, ".zhiku-chat-bubble"))
        assert bubble.get_attribute("aria-label") == "打开对话"
        bubble.click()
        frame = browser.find_element(By.CSS_SELECTOR, "iframe.zhiku-chat-frame")
        assert frame.get_attribute("src").startswith(server + f"/embed/{assistant.pk}/chat/")
        browser.switch_to.frame(frame)
        wait_ready(browser)
        assert browser.find_element(By.ID, "vc-name").text == "产品助手"
        assert "可以回答价格与安装问题" in browser.find_element(By.ID, "vc-messages").text
        suggestions = [b.text for b in browser.find_elements(By.CSS_SELECTOR, ".vc-suggest")]
        assert suggestions == ["知库专业版的价格是多少？", "安装需要什么环境？"]
        browser.find_elements(By.CSS_SELECTOR, ".vc-suggest")[0].click()  # a suggested question asks it
        Wait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".vc-msg.assistant .vc-feedback button"))
        answer = browser.find_elements(By.CSS_SELECTOR, ".vc-msg.assistant")[-1]
        assert "9800" in answer.find_element(By.CSS_SELECTOR, ".vc-answer").text
        assert answer.find_elements(By.CSS_SELECTOR, ".vc-answer .vc-cite")  # [n] shown as a citation
        sources = answer.find_element(By.CSS_SELECTOR, ".vc-sources").text
        assert "知库专业版" in sources and "价格" in sources
        answer.find_element(By.CSS_SELECTOR, ".vc-cite").click()  # the cited source opens with its text
        assert "9800" in answer.find_element(By.CSS_SELECTOR, ".vc-sources li.cited .vc-snippet").text
        answer.find_element(By.CSS_SELECTOR, '.vc-feedback button[data-rating="up"]').click()
        Wait(browser, 10).until(lambda d: Feedback.objects.filter(rating="up").exists())
        conversation = Conversation.objects.get()
        assert conversation.channel == Channel.EMBED and conversation.visitor.startswith("v-")
        # A follow-up continues the same conversation (the ticket in the frame's storage names the visitor).
        follow = ask_in(browser, "安装的系统要求是什么？")
        assert "安装指南" in follow.find_element(By.CSS_SELECTOR, ".vc-sources").text
        assert Conversation.objects.count() == 1
        assert csp_violations(browser) == []
        browser.switch_to.default_content()
        browser.save_screenshot("/tmp/embed-ok.png")

        # The same page from an origin not listed: the frame shows why, not the chat; the stream cannot be called.
        refused = f"http://127.0.0.1:{port}"
        browser.get(refused + "/index.html")
        Wait(browser, 20).until(lambda d: d.find_element(By.CSS_SELECTOR, ".zhiku-chat-bubble")).click()
        frame = browser.find_element(By.CSS_SELECTOR, "iframe.zhiku-chat-frame")
        browser.switch_to.frame(frame)
        Wait(browser, 20).until(lambda d: d.execute_script(
            "return document.readyState === 'complete' && location.href !== 'about:blank'"))
        shown = browser.execute_script("return location.href")
        assert shown.startswith(server), shown           # the server's refusal, not Chromium's blocked-frame page
        assert "不允许嵌入此应用" in browser.find_element(By.TAG_NAME, "body").text
        assert browser.find_elements(By.ID, "vc-question") == [] and browser.find_elements(By.ID, "vc-config") == []
        browser.switch_to.default_content()
        browser.save_screenshot("/tmp/embed-refused.png")
        outcome = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch(arguments[0], {method: "POST", headers: {"Content-Type": "application/json"},
                                 body: JSON.stringify({question: "知库专业版的价格是多少？"})})
              .then((r) => done("status " + r.status), (e) => done("refused: " + e.name));
        """, f"{server}/embed/{assistant.pk}/chat/stream/")
        assert outcome.startswith("refused")  # no CORS for any page: the browser keeps the answer from it
        assert Conversation.objects.count() == 1


def test_a_share_link_page_answers_an_anonymous_visitor(server, browser, assistant, alice, docs_kb):
    from selenium.webdriver.common.by import By

    assistant_update(assistant=assistant, user=alice, share_access="public", description="回答知库产品的价格、功能与安装问题",
                     opening_message="您好！请问有什么可以帮您？", suggested_questions=["知库专业版的价格是多少？"])
    watch_csp(browser)
    browser.get(f"{server}/s/{assistant.share_token}/")
    assert browser.find_element(By.ID, "vc-name").text == "产品助手"
    answer = ask_in(browser, "知库专业版的价格是多少？")
    assert "9800" in answer.find_element(By.CSS_SELECTOR, ".vc-answer").text
    assert "知库专业版" in answer.find_element(By.CSS_SELECTOR, ".vc-sources").text
    cookie = browser.get_cookie("zhiku_visitor")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert browser.execute_script("return document.cookie").find("zhiku_visitor") == -1
    # Earlier chats: the visitor's own, reopened with their answers.
    browser.find_element(By.ID, "vc-new").click()
    browser.find_element(By.ID, "vc-history-toggle").click()
    from tests.browser import Wait

    item = Wait(browser, 10).until(lambda d: d.find_element(By.CSS_SELECTOR, "#vc-conversations li button"))
    assert "知库专业版的价格" in item.text
    item.click()
    Wait(browser, 10).until(lambda d: "9800" in d.find_element(By.ID, "vc-messages").text)
    assert csp_violations(browser) == []
    browser.save_screenshot("/tmp/share.png")
    assert Conversation.objects.get().channel == Channel.SHARE
