"""The MCP server end to end: the official ``mcp`` SDK's own clients against the running platform.

Streamable HTTP: ``mcp.client.streamable_http.streamable_http_client`` (mcp 2's name for v1's
``streamablehttp_client``) and ``ClientSession`` against daphne serving config.asgi on the test database
(tests/browser.py), with the per-key budget counted in the real Redis. Stdio: ``mcp.client.stdio.stdio_client``
starting ``manage.py mcp_stdio``. Refusals: no key, a bad or revoked key (401 before any MCP processing), a key
over its budget (429), a KB the owner lost (gone from the list and the search), ``ask_assistant`` with a KB key.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx2
import pytest
import redis
import requests
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from assistants.keys import key_revoke
from assistants.models import ApiKey
from assistants.services import assistant_create, assistant_key_create, kb_key_create
from chat.models import Conversation
from chat.services import in_thread
from knowledge.models import Chunk, Document, KnowledgeBase, Membership, Role
from tests.browser import ROOT, daphne, server_env
from tests.helpers import redis_available

REDIS_URL = "redis://127.0.0.1:6379/10"
PREFIX = f"zhiku-mcp-test-{os.getpid()}"
LIVE = pytest.mark.django_db(transaction=True)  # the server in another process reads what the test wrote
TOOLS = {"list_knowledge_bases", "search_knowledge", "ask_assistant"}


@pytest.fixture(scope="module")
def live(tmp_path_factory, django_db_setup, django_db_blocker):
    """One daphne for the module, its key budgets in Redis (each test makes its own users, KBs and keys)."""
    env = {"REDIS_URL": REDIS_URL, "ZHIKU_REDIS_PREFIX": PREFIX} if redis_available(REDIS_URL) else {}
    with django_db_blocker.unblock(), daphne(tmp_path_factory.mktemp("mcp") / "daphne.log", **env) as url:
        yield url


async def _session_run(url: str, key: str, work):
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http:
        async with streamable_http_client(url + "/mcp/", http_client=http) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                return await work(session)


def over_http(url: str, key: str, work):
    """``await work(session)`` in an initialised SDK client session with ``key``; its result."""
    return asyncio.run(_session_run(url, key, work))


def call(url: str, key: str, tool: str, **arguments):
    """One tool call over streamable HTTP: (is_error, structured content)."""
    async def work(session):
        result = await session.call_tool(tool, arguments)
        return result.is_error, result.structured_content

    return over_http(url, key, work)


def raw_post(url: str, headers: dict[str, str]) -> requests.Response:
    """A plain JSON-RPC ``tools/list`` POST, to read the HTTP answer itself."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return requests.post(url + "/mcp/", json=body, timeout=30,
                         headers={"Accept": "application/json, text/event-stream", **headers})


@pytest.fixture
def other_kb(make_kb, alice, ingest):
    kb = make_kb(alice, "人事制度")
    ingest(kb, {"leave.md": "# 休假\n\n员工每年享有 15 天带薪年假，须提前一周申请。\n"})
    return kb


@LIVE
def test_a_kb_key_lists_and_searches_its_own_kb_only(live, alice, docs_kb, other_kb):
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    Document.objects.filter(kb=docs_kb, source_name="pro.md").update(source_url="https://docs.example.com/pro")

    async def tools(session):
        return {t.name: t for t in (await session.list_tools()).tools}

    listed = over_http(live, key, tools)
    assert set(listed) == TOOLS
    assert {"query", "kb_ids", "top_k", "metadata"} <= set(listed["search_knowledge"].input_schema["properties"])

    error, kbs = call(live, key, "list_knowledge_bases")
    assert not error and kbs["key_kind"] == "kb" and kbs["assistant"] is None
    assert [(k["id"], k["name"], k["document_count"]) for k in kbs["knowledge_bases"]] == [(docs_kb.pk, "产品文档", 2)]
    assert kbs["knowledge_bases"][0]["chunk_count"] == Chunk.objects.filter(kb=docs_kb).count()

    error, found = call(live, key, "search_knowledge", query="知库专业版一年多少钱？", top_k=3)
    assert not error and found["verdict"] in ("answered", "uncertain") and len(found["results"]) <= 3
    first = found["results"][0]
    assert "9800" in first["text"] and first["document"]["title"] == "知库专业版" and "价格" in first["section"]
    assert first["document"]["source_url"] == "https://docs.example.com/pro"        # a web page's own URL
    assert 0 < first["relevance"] <= 1 and first["pages"] == {"start": None, "end": None}
    assert Chunk.objects.get(pk=first["chunk_id"]).document.source_name == "pro.md"

    # The key's KB only: the other KB of the same owner is not found; a leave question finds nothing of it.
    error, refused = call(live, key, "search_knowledge", query="年假有几天", kb_ids=[other_kb.pk])
    assert error and refused["error"]["code"] == "kb_not_found"
    _, leave = call(live, key, "search_knowledge", query="员工每年享有几天带薪年假")
    assert all(r["kb_id"] == docs_kb.pk for r in leave["results"])

    # ask_assistant needs an assistant key: a tool error with the registered code, in Chinese by default.
    error, asked = call(live, key, "ask_assistant", question="专业版多少钱？")
    assert error and asked["error"]["code"] == "key_wrong_kind" and "应用" in asked["error"]["message"]


@LIVE
def test_metadata_filters_and_bad_arguments(live, alice, docs_kb):
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    Document.objects.filter(kb=docs_kb, source_name="install.md").update(metadata={"team": "ops", "year": 2024})

    _, anything = call(live, key, "search_knowledge", query="知库 价格 安装", top_k=10)
    assert {r["document"]["title"] for r in anything["results"]} == {"知库专业版", "安装指南"}
    for metadata in ({"team": "ops"}, {"year": 2024}, {"team": "ops", "year": "2024"}):
        _, narrowed = call(live, key, "search_knowledge", query="知库 价格 安装", top_k=10, metadata=metadata)
        assert narrowed["results"] and {r["document"]["title"] for r in narrowed["results"]} == {"安装指南"}
    _, none = call(live, key, "search_knowledge", query="知库 价格 安装", metadata={"team": "sales"})
    assert none["results"] == []

    error, bad = call(live, key, "search_knowledge", query="价格", metadata={"k": "v" * 501})
    assert error and bad["error"]["code"] == "invalid_metadata_filter"
    error, blank = call(live, key, "search_knowledge", query="   ")
    assert error and blank["error"]["code"] == "empty_question"
    error, zero = call(live, key, "search_knowledge", query="价格", top_k=0)
    assert error and zero["error"]["code"] == "invalid_top_k"
    error, many = call(live, key, "search_knowledge", query="价格", kb_ids=list(range(1, 30)))
    assert error and many["error"]["code"] == "too_many_kbs"
    error, typed = call(live, key, "search_knowledge", query="价格", top_k="many")  # not an integer: the SDK's check
    assert error and typed is None
    # A NUL cannot reach PostgreSQL: the same code as REST, /v1 and /dify, in the query or a metadata key.
    for arguments in ({"query": "价\u0000格"}, {"query": "价格", "metadata": {"te\u0000am": "ops"}},
                      {"query": "价格", "metadata": {"team": "o\u0000ps"}}):
        error, nul = call(live, key, "search_knowledge", **arguments)
        assert error and nul["error"]["code"] == "invalid_characters", arguments


@LIVE
def test_an_assistant_key_reaches_its_assistants_kbs_asks_and_loses_a_kb_its_owner_lost(live, alice, bob, docs_kb,
                                                                                       make_kb, ingest):
    shared = make_kb(bob, "Bob 共享")
    ingest(shared, {"faq.md": "# 报销\n\n差旅报销须在出差结束后 30 天内提交。\n"})
    Membership.objects.create(kb=shared, user=alice, role=Role.VIEWER)
    made = assistant_create(owner=alice, name="两库助手", kb_ids=[shared.pk, docs_kb.pk])
    row, key = assistant_key_create(user=alice, assistant=made)

    _, kbs = call(live, key, "list_knowledge_bases")
    assert kbs["assistant"]["name"] == "两库助手" and [k["id"] for k in kbs["knowledge_bases"]] == [shared.pk, docs_kb.pk]
    _, found = call(live, key, "search_knowledge", query="差旅报销多久内提交", kb_ids=[shared.pk])
    assert "30 天" in found["results"][0]["text"]

    error, nul = call(live, key, "ask_assistant", question="知库专业版的\u0000价格")
    assert error and nul["error"]["code"] == "invalid_characters"
    error, answer = call(live, key, "ask_assistant", question="知库专业版的价格是多少？")
    assert not error and "9800" in answer["answer"] and answer["verdict"] in ("answered", "uncertain")
    cited = answer["citations"][0]
    assert cited["document"]["title"] == "知库专业版" and cited["chunk_id"] and 0 < cited["relevance"] <= 1
    conversation = Conversation.objects.get(pk=answer["conversation_id"])
    assert conversation.assistant == made and conversation.channel == "mcp"
    _, again = call(live, key, "ask_assistant", question="那安装需要什么？", conversation_id=answer["conversation_id"])
    assert again["conversation_id"] == answer["conversation_id"] and conversation.messages.count() == 4
    # Another key of the same assistant cannot continue this key's conversation.
    _, other_key = assistant_key_create(user=alice, assistant=made)
    error, foreign = call(live, other_key, "ask_assistant", question="再说一遍", conversation_id=answer["conversation_id"])
    assert error and foreign["error"]["code"] == "conversation_not_found"

    # Alice loses Bob's KB: it leaves the list and the search at the next call.
    Membership.objects.filter(kb=shared, user=alice).delete()
    _, kbs = call(live, key, "list_knowledge_bases")
    assert [k["id"] for k in kbs["knowledge_bases"]] == [docs_kb.pk]
    error, refused = call(live, key, "search_knowledge", query="差旅报销多久内提交", kb_ids=[shared.pk])
    assert error and refused["error"]["code"] == "kb_not_found"
    _, everything = call(live, key, "search_knowledge", query="差旅报销多久内提交", top_k=10)
    assert all(r["kb_id"] == docs_kb.pk for r in everything["results"])
    # With none of its KBs readable (her own KB handed to Bob) the assistant is unavailable, to every tool.
    KnowledgeBase.objects.filter(pk=docs_kb.pk).update(owner=bob)
    for tool, arguments in (("list_knowledge_bases", {}), ("search_knowledge", {"query": "价格"}),
                            ("ask_assistant", {"question": "价格"})):
        error, gone = call(live, key, tool, **arguments)
        assert error and gone["error"]["code"] == "assistant_unavailable", tool


@LIVE
def test_no_key_a_bad_key_and_a_revoked_key_are_401_before_any_mcp_processing(live, alice, assistant):
    row, key = assistant_key_create(user=alice, assistant=assistant)
    assert raw_post(live, {"Authorization": f"Bearer {key}"}).status_code == 200

    for headers in ({}, {"Authorization": "Token abc"}, {"Authorization": f"Bearer {key}x"}):
        refused = raw_post(live, headers)
        assert refused.status_code == 401 and refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert refused.json()["error"]["code"] in ("key_missing", "key_invalid")
    english = raw_post(live, {"Authorization": f"Bearer {key}x", "Accept-Language": "en"})
    assert english.json()["error"] == {"code": "key_invalid", "message": "The API key is not valid, or it was revoked."}

    key_revoke(key=ApiKey.objects.get(pk=row.pk))
    assert raw_post(live, {"Authorization": f"Bearer {key}"}).json()["error"]["code"] == "key_invalid"
    # The SDK's own client cannot even initialise: the server's error answer, raised out of its task groups.
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
        over_http(live, key, lambda session: session.list_tools())


@LIVE
def test_one_plain_json_rpc_post_calls_a_tool(live, alice, docs_kb):
    """What docs/integrations.md's curl example sends: stateless, so no initialize is needed first."""
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "专业版多少钱", "top_k": 2}}}
    answer = requests.post(live + "/mcp/", json=body, timeout=60, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"})
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("application/json")
    result = answer.json()["result"]
    assert result["isError"] is False and "9800" in result["structuredContent"]["results"][0]["text"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]

    # Stateless: no stream to open (GET) nor session to end (DELETE); a body that is no JSON-RPC is the SDK's 400.
    auth = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}
    for method in ("GET", "DELETE", "PUT"):
        refused = requests.request(method, live + "/mcp/", timeout=60, headers=auth)
        assert refused.status_code == 405 and refused.headers["Allow"] == "POST"
        assert refused.json()["error"]["code"] == "method_not_allowed"
    for data in (b"{not json", b"[]", b""):
        odd = requests.post(live + "/mcp/", data=data, timeout=60, headers=auth)
        assert odd.status_code == 400 and "error" in odd.json(), data


def search_over_http(url: str, key: str, query: str, headers: dict[str, str]) -> dict:
    """``search_knowledge`` in one plain JSON-RPC POST (stateless), with ``headers``: its structured content."""
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": query}}}
    answer = requests.post(url + "/mcp/", json=body, timeout=60, headers={
        "Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream", **headers})
    assert answer.status_code == 200, answer.text[:300]
    result = answer.json()["result"]
    assert result["isError"] is False, result
    return result["structuredContent"]


@LIVE
def test_a_not_found_search_says_so_in_the_requests_language(live, alice, docs_kb):
    """Issue 47 item 5: a KB without a not-found text of its own answers it in the language of the request's
    Accept-Language, Chinese by default (knowledge/not_found.py); a KB's own text is kept as written."""
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    off_topic, zh, en = "火星的首都是哪座城市？", "抱歉，知识库中未找到相关内容。", "Sorry, nothing in the knowledge base answers this."
    for headers, expected in (({}, zh), ({"Accept-Language": "zh-CN,zh;q=0.9"}, zh), ({"Accept-Language": "en-US,en;q=0.9"}, en)):
        found = search_over_http(live, key, off_topic, headers)
        assert found["verdict"] == "not_found" and found["not_found_text"] == expected, (headers, found)
    KnowledgeBase.objects.filter(pk=docs_kb.pk).update(not_found_text="请拨打客服热线 400-000-0000。")
    found = search_over_http(live, key, off_topic, {"Accept-Language": "en"})
    assert found["not_found_text"] == "请拨打客服热线 400-000-0000。"
    assert search_over_http(live, key, "知库专业版一年多少钱？", {"Accept-Language": "en"})["not_found_text"] == ""


@LIVE
def test_a_key_over_its_budget_is_429_with_retry_after(live, alice, docs_kb):
    if not redis_available(REDIS_URL):
        pytest.skip("needs the Redis server at 127.0.0.1:6379 (make test starts one)")
    row, key = kb_key_create(user=alice, kb_id=docs_kb.pk, rate_limit=2)
    statuses = [raw_post(live, {"Authorization": f"Bearer {key}"}) for _ in range(3)]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert statuses[2].json()["error"]["code"] == "key_rate_limited" and 1 <= int(statuses[2].headers["Retry-After"]) <= 60
    assert redis.Redis.from_url(REDIS_URL).keys(f"{PREFIX}:keyrate:{row.pk}:*")  # counted in Redis, as every worker does


@LIVE
def test_concurrent_clients_each_get_their_own_answers(live, alice, docs_kb, other_kb):
    _, docs_key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    _, other_key = kb_key_create(user=alice, kb_id=other_kb.pk)

    async def listed(session):
        return (await session.call_tool("list_knowledge_bases", {})).structured_content

    async def both():
        return await asyncio.gather(*[_session_run(live, k, listed) for k in (docs_key, other_key) * 3])

    answers = asyncio.run(both())
    assert [a["knowledge_bases"][0]["id"] for a in answers] == [docs_kb.pk, other_kb.pk] * 3


@LIVE
def test_other_paths_stay_with_django(live):
    assert requests.get(live + "/mcp/other/", timeout=30).status_code == 404
    assert requests.get(live + "/api/schema/", timeout=30).status_code in (200, 401, 403)


@LIVE
def test_the_stdio_server_serves_the_same_tools_to_the_sdks_stdio_client(alice, docs_kb):
    row, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_stdio"], cwd=str(ROOT),
                                   env={**server_env(), "ZHIKU_MCP_KEY": key})

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                found = await session.call_tool("search_knowledge", {"query": "专业版价格"})
                await in_thread(lambda: key_revoke(key=ApiKey.objects.get(pk=row.pk)))()
                revoked = await session.call_tool("list_knowledge_bases", {})
                return names, found, revoked

    names, found, revoked = asyncio.run(run())
    assert names == TOOLS
    assert not found.is_error and "9800" in found.structured_content["results"][0]["text"]
    assert revoked.is_error and revoked.structured_content["error"]["code"] == "key_invalid"


@LIVE
def test_the_stdio_command_refuses_a_bad_key_at_start(alice, docs_kb):
    import subprocess

    done = subprocess.run([sys.executable, "manage.py", "mcp_stdio", "--key", "zk-nothing"], cwd=ROOT, env=server_env(),
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "key_invalid" in done.stderr and done.stdout == ""


@LIVE
def test_ask_assistant_streams_a_models_answer_to_its_end_and_a_failing_model_is_a_tool_error(tmp_path, alice, assistant,
                                                                                            fake_llm):
    """The assistant's system prompt reaches the model (the fake OpenAI-compatible server at the wire); the
    streamed tokens make the answer and its [1] the citation; a model answering HTTP 500 is the turn's error code."""
    from assistants.services import assistant_update

    assistant_update(assistant=assistant, user=alice, system_prompt="你是知库的售前顾问。")
    _, key = assistant_key_create(user=alice, assistant=assistant)
    llm = {"ZHIKU_LLM_BASE_URL": fake_llm.url, "ZHIKU_LLM_MODEL": "fake-model", "ZHIKU_LLM_API_KEY": "test-key"}
    with daphne(tmp_path / "daphne.log", **llm) as url:
        error, answer = call(url, key, "ask_assistant", question="知库专业版的价格是多少？")
        assert not error and answer["answer"] == "知库专业版的价格是每年 9800 元[1]。"
        assert [c["n"] for c in answer["citations"]] == [1] and answer["citations"][0]["document"]["title"] == "知库专业版"
        streamed = [r.body for r in fake_llm.streams]
        assert streamed and "你是知库的售前顾问。" in streamed[-1]["messages"][0]["content"]
        fake_llm.status = 500
        error, failed = call(url, key, "ask_assistant", question="专业版包含几个席位？")
        assert error and failed["error"]["code"] == "llm_failed"


@LIVE
def test_bad_bodies_get_json_rpc_errors_with_a_content_type(live, alice, docs_kb):
    _, key = kb_key_create(user=alice, kb_id=docs_kb.pk)
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    cases = [("text/plain", b"hello"), ("application/json", b"{not json"),
             ("application/json", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}, "x": "\\u0000"}')]
    for content_type, body in cases:
        r = requests.post(live + "/mcp/", data=body, timeout=30, headers={**headers, "Content-Type": content_type})
        assert 400 <= r.status_code < 500 or r.status_code == 200
        assert r.headers.get("Content-Type", "").startswith("application/json"), (content_type, r.status_code, r.text)
        if r.status_code >= 400:
            assert r.json()["error"]["code"] < 0 and r.json()["jsonrpc"] == "2.0"
