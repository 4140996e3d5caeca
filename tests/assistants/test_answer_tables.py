"""Answers holding table rows read as GFM tables wherever they are published: the extractive answer and an LLM's
reply through the OpenAI-compatible ``/v1/chat/completions`` (the official ``openai`` SDK, streamed and not) and
through MCP's ``ask_assistant`` (the official ``mcp`` SDK), each parsed by markdown-it-py's GFM table rule. The
upstream LLM is the fake OpenAI-compatible server of tests/chat/fake_llm.py; the platform is daphne on the test
database (tests/browser.py)."""
from __future__ import annotations

import asyncio
import uuid

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from assistants.services import assistant_create, assistant_key_create
from knowledge.models import AnswerMode
from tests.browser import daphne
from tests.chat.fake_llm import FakeLLM
from tests.gfm import gfm_html, gfm_tables

LIVE = pytest.mark.django_db(transaction=True)  # the server in another process reads what the test wrote
SPECS = ("# XK 系列电动车参数\n\n以下是 XK 系列各型号的技术参数。\n\n"
         "| 参数 | XK-300 | XK-500 |\n| --- | --- | --- |\n| 续航里程 | 80公里 | 120公里 |\n"
         "| 充电时间 | 6小时 | 8小时 |\n| 整车重量 | 55公斤 | 70公斤 |\n| 最高时速 | 25公里/小时 | 45公里/小时 |\n")
QUESTION = "XK 系列的充电时间是多少？"
# An LLM's reply with a table as models often write one: no delimiter row, the citation after the closing pipe.
LLM_REPLY = "两款的充电时间如下：\n| 型号 | 充电时间 |\n| XK-300 | 6小时 |\n| XK-500 | 8小时 |[1]\n以上为标准充电器的时间。"


@pytest.fixture(scope="module")
def upstream():
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker, upstream):
    env = {"ZHIKU_LLM_BASE_URL": upstream.url, "ZHIKU_LLM_MODEL": "fake-model", "ZHIKU_LLM_API_KEY": "upstream-key",
           "ZHIKU_LLM_TIMEOUT": "10", "REDIS_URL": "redis://127.0.0.1:6379/10",
           "ZHIKU_REDIS_PREFIX": f"test-tables-{uuid.uuid4().hex[:12]}"}
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("tables") / "daphne.log", **env) as url:
        yield url


def specs_key(make_kb, ingest, alice, *, extractive: bool) -> str:
    kb = make_kb(alice, "车型参数", answer_mode=AnswerMode.EXTRACTIVE if extractive else AnswerMode.LLM)
    ingest(kb, {"xk.md": SPECS})
    assistant = assistant_create(owner=alice, name="参数助手", kb_ids=[kb.pk])
    return assistant_key_create(user=alice, assistant=assistant, name="tables")[1]


def sdk(live: str, key: str):
    from openai import OpenAI

    return OpenAI(base_url=f"{live}/v1", api_key=key, max_retries=0, timeout=60)


def assert_charging_row_table(answer: str) -> None:
    """The answer holds one GFM table: the spec sheet's header, then the 充电时间 row (its citation in its last cell)."""
    tables = gfm_tables(answer)
    assert len(tables) == 1, answer
    header, *rows = tables[0]
    assert header == ["参数", "XK-300", "XK-500"]
    assert [r[:2] for r in rows] == [["充电时间", "6小时"]] and rows[0][2].startswith("8小时"), answer
    assert "<table>" in gfm_html(answer) and "<th>参数</th>" in gfm_html(answer)


@LIVE
def test_the_extractive_answer_s_row_is_a_table_with_its_header_over_v1(live, alice, make_kb, ingest):
    key = specs_key(make_kb, ingest, alice, extractive=True)
    client = sdk(live, key)
    reply = client.chat.completions.create(model="参数助手", messages=[{"role": "user", "content": QUESTION}])
    assert_charging_row_table(reply.choices[0].message.content)
    streamed = client.chat.completions.create(model="参数助手", messages=[{"role": "user", "content": QUESTION}],
                                              stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert text == reply.choices[0].message.content


async def _ask_over_mcp(url: str, key: str, question: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(60.0)) as http:
        async with streamable_http_client(url + "/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                result = await session.call_tool("ask_assistant", {"question": question})
                return result.is_error, result.structured_content


@LIVE
def test_the_extractive_answer_s_row_is_a_table_with_its_header_over_mcp(live, alice, make_kb, ingest):
    key = specs_key(make_kb, ingest, alice, extractive=True)
    error, asked = asyncio.run(_ask_over_mcp(live, key, QUESTION))
    assert not error, asked
    assert_charging_row_table(asked["answer"])


@LIVE
def test_an_llm_table_without_its_delimiter_row_reaches_the_client_as_a_table(live, upstream, alice, make_kb, ingest):
    key = specs_key(make_kb, ingest, alice, extractive=False)
    upstream.say(LLM_REPLY, 5)  # streamed 5 characters a delta: rows arrive cut anywhere
    client = sdk(live, key)
    reply = client.chat.completions.create(model="参数助手", messages=[{"role": "user", "content": QUESTION}])
    answer = reply.choices[0].message.content
    assert gfm_tables(LLM_REPLY) == []  # as the LLM wrote it, GFM sees no table
    assert gfm_tables(answer) == [[["型号", "充电时间"], ["XK-300", "6小时"], ["XK-500", "8小时[1]"]]]
    html = gfm_html(answer)
    assert "<p>两款的充电时间如下：</p>" in html and "<p>以上为标准充电器的时间。</p>" in html
    streamed = client.chat.completions.create(model="参数助手", messages=[{"role": "user", "content": QUESTION}],
                                              stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == answer
    error, asked = asyncio.run(_ask_over_mcp(live, key, QUESTION))
    assert not error and asked["answer"] == answer
