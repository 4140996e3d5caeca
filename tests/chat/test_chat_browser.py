"""End to end: the chat page in headless Chromium against daphne (websockets) on the test database."""
from __future__ import annotations

import pytest
from chat_helpers import DOCS

from tests.browser import CHROMEDRIVER, CHROMIUM, csp_violations, selenium, watch_csp
from tests.helpers import set_lines

pytestmark = [
    pytest.mark.usefixtures("judge_only"),
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

# Plain text keeps the markup literally, so it reaches the answer and the sources as text.
XSS_DOC = {"security.txt": "安全须知第一条：<img src=x onerror=\"window.__xss=1\"> 不要在文档里写脚本。\n"}


def sign_in(server: str, browser, user) -> None:
    """The browser carries ``user``'s session cookie (set on any page of the site)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    browser.get(server + "/static/chat/chat.js")
    browser.add_cookie({"name": "sessionid", "value": client.cookies["sessionid"].value, "path": "/"})


def ask(browser, question: str):
    """Send ``question`` from the chat page; the newest answer once its meta line (timings) is filled in."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    browser.find_element(By.ID, "send").click()
    Wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant")
        and d.find_elements(By.CSS_SELECTOR, ".msg.assistant")[-1].find_element(By.CSS_SELECTOR, ".meta").text)
    return browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")[-1]


def test_ask_watch_the_answer_stream_see_sources_and_rate_it(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    from chat.models import Feedback, Message
    from knowledge.models import EvalQuestion
    from tests.browser import Wait

    ingest(kb, {**DOCS, **XSS_DOC})
    kb.score_threshold = 0.0
    kb.save(update_fields=["score_threshold"])
    sign_in(server, browser, alice)
    # Log the type of every websocket event the page receives, from before its script runs.
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__events = [];
        const Native = window.WebSocket;
        window.WebSocket = function (url, protocols) {
          const ws = new Native(url, protocols);
          ws.addEventListener("message", (m) => window.__events.push(JSON.parse(m.data).type));
          return ws;
        };
        window.WebSocket.prototype = Native.prototype;
        window.WebSocket.OPEN = Native.OPEN;
    """})
    watch_csp(browser)
    browser.get(server + "/chat/")
    wait = Wait(browser, 20)
    assert kb.name in browser.find_element(By.ID, "kb-list").text

    answer = ask(browser, "知库专业版的价格是多少？")
    assert "9800" in answer.find_element(By.CSS_SELECTOR, ".answer").text
    assert answer.find_elements(By.CSS_SELECTOR, ".answer .cite")  # [n] rendered as citation markers
    sources = answer.find_element(By.CSS_SELECTOR, ".sources").text
    assert "知库专业版" in sources and "价格" in sources
    assert "首字" in answer.find_element(By.CSS_SELECTOR, ".meta").text

    # Streamed: the page got start, rewrite, sources, many tokens, then finish.
    events = browser.execute_script("return window.__events")
    assert events[:3] == ["start", "rewrite", "sources"] and events[-1] == "finish"
    assert events.count("token") > 3
    message = Message.objects.filter(role="assistant").latest("id")
    assert message.status == "complete" and "9800" in message.content
    assert message.timings["first_token_ms"] <= message.timings["total_ms"]

    # Feedback from the page reaches the database.
    answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="up"]').click()
    wait.until(lambda d: Feedback.objects.filter(message=message, rating="up").exists())
    # 👎 「引用的段落不对」 teaches: the owner's vote names the cited passage wrong for the question (a confirmed label).
    answer.find_element(By.CSS_SELECTOR, '.feedback button[data-rating="down"]').click()
    wait.until(lambda d: answer.find_elements(By.CSS_SELECTOR, ".feedback input.wrong-passage"))
    assert "引用的段落不对" in answer.find_element(By.CSS_SELECTOR, ".feedback").text
    answer.find_element(By.CSS_SELECTOR, ".feedback input.wrong-passage").click()
    answer.find_elements(By.CSS_SELECTOR, ".feedback button")[-1].click()
    wait.until(lambda d: Feedback.objects.filter(message=message, rating="down", reason_code="wrong_passage").exists())
    label = EvalQuestion.objects.get(message_id=message.pk)
    assert label.status == "confirmed" and label.negative_chunk_ids == [message.citations[0]["chunk_id"]]

    # The conversation shows up in the sidebar.
    wait.until(lambda d: "知库专业版的价格是多少" in d.find_element(By.ID, "conversations").text)

    # Text from documents is never parsed as HTML.
    answer = ask(browser, "安全须知第一条是什么？<b onclick=\"window.__xss=2\">粗体</b>")
    assert '<img src=x onerror="window.__xss=1">' in answer.find_element(By.CSS_SELECTOR, ".answer").text
    assert '<b onclick="window.__xss=2">' in browser.find_elements(By.CSS_SELECTOR, ".msg.user")[-1].text
    assert browser.find_elements(By.CSS_SELECTOR, "#messages b") == []
    assert browser.find_elements(By.CSS_SELECTOR, "#messages img") == []
    assert browser.execute_script("return window.__xss === undefined")
    # All of it under the page's Content-Security-Policy (tests/config/test_csp.py), which it never ran into.
    assert csp_violations(browser) == []


def test_without_websockets_the_page_streams_over_sse(server, browser, alice, chat_kb):
    from selenium.webdriver.common.by import By

    sign_in(server, browser, alice)
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": "delete window.WebSocket;"})
    browser.get(server + "/chat/")
    answer = ask(browser, "知库专业版的价格是多少？")
    assert "9800" in answer.find_element(By.CSS_SELECTOR, ".answer").text
    assert "价格" in answer.find_element(By.CSS_SELECTOR, ".sources").text


def test_a_table_in_the_answer_is_shown_as_a_table_with_its_citation(server, browser, alice, make_kb, ingest):
    """「标准如下：」 and the table chunked on its own: the page shows the rows as a table (cells built as text), in the
    answer and in its source."""
    from selenium.webdriver.common.by import By
    from test_chat_answer_settings import POLICY_MD

    kb = make_kb(alice, "差旅", score_threshold=0.0)
    ingest(kb, {"policy.md": POLICY_MD})
    sign_in(server, browser, alice)
    browser.get(server + "/chat/")
    table = ask(browser, "出差去北京住宿每晚能报多少？").find_element(By.CSS_SELECTOR, ".answer table")
    rows = [[c.text for c in r.find_elements(By.CSS_SELECTOR, "th, td")] for r in table.find_elements(By.TAG_NAME, "tr")]
    assert rows[0] == ["职级", "一类城市", "二类城市"]
    assert rows[1] == ["总监", "700", "550"]
    assert rows[2] == ["经理", "550", "450[1]"]
    assert table.find_elements(By.CSS_SELECTOR, "th")  # the first row is the header
    assert table.find_elements(By.CSS_SELECTOR, "tr:last-child td:last-child .cite")  # the [n] after the last row
    # The table chunk among the sources is a table too (cells as text), not `| --- |` Markdown.
    snippet = next(s for s in browser.find_elements(By.CSS_SELECTOR, ".msg.assistant .sources .snippet")
                   if s.find_elements(By.TAG_NAME, "table"))
    header = [c.text for c in snippet.find_elements(By.CSS_SELECTOR, "tr:first-child th")]
    assert header == ["职级", "一类城市", "二类城市"] and "---" not in snippet.text


def verdict_of(answer):
    from selenium.webdriver.common.by import By

    badge = answer.find_element(By.CSS_SELECTOR, ".verdict-line .badge.verdict")
    return badge.get_attribute("data-verdict"), badge.text


def test_each_answer_shows_its_verdict_live_and_when_the_conversation_is_reopened(server, browser, alice, kb, ingest, tmp_path):
    """Issue 19 item 1: answered, uncertain and not found, each in words and a style of its own; saved with the
    message, so a reopened conversation shows the same. The lines are moved between turns (gate 0 and line 0:
    everything answered; line 1: everything uncertain; gate 1: nothing found)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from chat.models import Message
    from tests.browser import Wait

    ingest(kb, DOCS)
    sign_in(server, browser, alice)
    browser.get(server + "/chat/")
    question = "知库专业版的价格是多少？"
    styles = {}
    for gate, line, verdict, words in [(0.0, 0.0, "answered", "已回答"), (0.0, 1.0, "uncertain", "不确定"),
                                       (1.0, 1.0, "not_found", "未找到")]:
        set_lines(kb, gate, line)
        answer = ask(browser, question)
        assert verdict_of(answer) == (verdict, words)
        assert f"verdict-{verdict}" in answer.get_attribute("class")
        styles[verdict] = (answer.value_of_css_property("background-color"), answer.value_of_css_property("border-left-color"))
        text = answer.find_element(By.CSS_SELECTOR, ".answer").text
        if verdict == "answered":
            assert "9800" in text and not text.startswith("没有找到确切答案")
        elif verdict == "uncertain":
            # The preface is the answer's own first line (chat/services.py), shown once.
            assert text.startswith("没有找到确切答案，以下内容可能相关：") and text.count("没有找到确切答案") == 1 and "9800" in text
        else:
            assert text == kb.not_found_text and not answer.find_elements(By.CSS_SELECTOR, ".sources li")
    assert len(set(styles.values())) == 3  # each outcome looks different
    browser.save_screenshot(str(tmp_path / "chat-verdicts.png"))
    assert list(Message.objects.filter(role="assistant").order_by("id").values_list("verdict", flat=True)) == \
        ["answered", "uncertain", "not_found"]

    # Reopened from the sidebar: the saved verdicts, in the same words.
    browser.find_element(By.ID, "new-chat").click()
    Wait(browser, 10).until(lambda d: not d.find_elements(By.CSS_SELECTOR, ".msg"))
    # The sidebar is drawn again whenever the list is reloaded: a button read just before may be gone.
    Wait(browser, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "#conversations button.open").click() or True)
    Wait(browser, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant")) == 3)
    answers = browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")
    assert [verdict_of(a) for a in answers] == [("answered", "已回答"), ("uncertain", "不确定"), ("not_found", "未找到")]
    assert [a.value_of_css_property("background-color") for a in answers] == [styles[v][0] for v in ("answered", "uncertain", "not_found")]


def test_the_verdict_reads_in_english(server, browser, alice, kb, ingest):
    from selenium.webdriver.common.by import By

    ingest(kb, DOCS)
    set_lines(kb, 0.0, 1.0)
    sign_in(server, browser, alice)
    browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})
    browser.get(server + "/chat/")
    answer = ask(browser, "知库专业版的价格是多少？")
    assert verdict_of(answer) == ("uncertain", "Uncertain")
    assert answer.find_element(By.CSS_SELECTOR, ".answer").text.startswith("No exact answer was found; the following may be relevant:")
    assert answer.find_element(By.CSS_SELECTOR, ".sources").text.startswith("Sources")
