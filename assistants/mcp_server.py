"""The MCP server (the official ``mcp`` SDK's ``MCPServer``): three tools over what an API key reaches now.

``list_knowledge_bases``, ``search_knowledge`` and ``ask_assistant`` (an assistant key only), over streamable HTTP at
``/mcp/`` (``assistants.mcp_http``) and stdio (``manage.py mcp_stdio``). The caller is a ``Caller`` in a context
variable the transport sets before the SDK runs. A tool's failure is an MCP tool error (``isError``) with the
registered code and message, never a protocol crash. The clients' side: docs/integrations.md "MCP server".
"""
from __future__ import annotations

import json
import logging
from contextlib import aclosing
from contextvars import ContextVar
from typing import Annotated, Any

from django.conf import settings
from django.utils import translation
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from assistants.errors import AssistantsError
from assistants.mcp_tools import Caller, answer_payload, ask_start, kbs_listing, knowledge_search
from chat.errors import ChatError
from chat.services import in_thread, turn_stream
from core.errors import ApplicationError, message
from core.safejson import check_characters
from knowledge.services.query_input import MAX_KBS, MAX_QUERY_CHARS, MAX_TOP_K

logger = logging.getLogger(__name__)

CALLER: ContextVar[Caller | None] = ContextVar("zhiku_mcp_caller", default=None)
"""The caller of the tools in this request (HTTP) or this process (stdio)."""

INSTRUCTIONS = (
    "知库 zhiku knowledge bases. list_knowledge_bases shows what this key may read; search_knowledge returns "
    "passages with their document, section, pages and relevance, and a verdict (answered / uncertain / not_found: "
    "say so rather than guess when it is not_found); ask_assistant (assistant keys) returns a cited answer."
)

server = MCPServer("zhiku", title="知库 zhiku", instructions=INSTRUCTIONS, version="1")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _result(payload: dict[str, Any]) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


def _error(code: str, text: str, extra: dict[str, Any] | None = None) -> CallToolResult:
    error = {"code": code, "message": text, **(extra or {})}
    return CallToolResult(content=[TextContent(type="text", text=f"{code}: {text}")],
                          structured_content={"error": error}, is_error=True)


async def _run(work, **arguments: Any) -> CallToolResult:
    """``await work(caller, **arguments)`` as a tool result, in the caller's language; errors as tool errors."""
    caller = CALLER.get()
    with translation.override(caller.language if caller and caller.language else settings.LANGUAGE_CODE):
        if caller is None:  # a transport that set no caller: nothing may be read
            return _error("key_missing", message(AssistantsError.KEY_MISSING))
        try:
            check_characters(arguments)       # one input rule on every entry: 400 invalid_characters elsewhere
            return _result(await work(caller, **arguments))
        except ApplicationError as exc:
            return _error(exc.code, str(exc.message), exc.extra)
        except Exception:  # noqa: BLE001 - a tool answers an error, it never takes the connection down
            logger.exception("MCP tool %s failed", getattr(work, "__name__", work))
            return _error("internal_error", message(ChatError.INTERNAL_ERROR))


async def _list(caller: Caller) -> dict[str, Any]:
    return await in_thread(kbs_listing)(caller)


async def _search(caller: Caller, **arguments: Any) -> dict[str, Any]:
    return await in_thread(knowledge_search)(caller, **arguments)


async def _ask(caller: Caller, *, question: str, conversation_id: int | None) -> dict[str, Any]:
    """A turn of the key's assistant streamed to its end (``chat.services.turn_stream``): its finish as the answer."""
    turn = await in_thread(ask_start)(caller, question=question, conversation_id=conversation_id)
    sources: list[dict[str, Any]] = []
    async with aclosing(turn_stream(turn)) as events:
        async for event in events:
            if event["type"] == "sources":
                sources = event["sources"]
            elif event["type"] == "error":
                raise ApplicationError(event["message"], code=event["code"])
            elif event["type"] == "finish":
                return answer_payload(event, sources)
    raise ApplicationError(message(ChatError.INTERNAL_ERROR), code="internal_error")


@server.tool(title="列出知识库 List knowledge bases", annotations=READ_ONLY)
async def list_knowledge_bases() -> CallToolResult:
    """The knowledge bases this key may read now: id, name, description, document and chunk counts.
    列出此密钥当前可读的知识库。"""
    return await _run(_list)


@server.tool(title="检索知识库 Search knowledge", annotations=READ_ONLY)
async def search_knowledge(
    query: Annotated[str, Field(description=f"The question or keywords (Chinese or English), at most {MAX_QUERY_CHARS} "
                                            "characters.")],
    kb_ids: Annotated[list[int] | None, Field(description=f"Only these knowledge bases (ids from list_knowledge_bases, "
                                              f"at most {MAX_KBS}); omitted: all the key reaches.")] = None,
    top_k: Annotated[int | None, Field(description=f"At most this many passages (1-{MAX_TOP_K}); omitted: the "
                                       "knowledge base's setting.")] = None,
    metadata: Annotated[dict[str, str | int | float | bool] | None,
                        Field(description="Only passages whose chunk or document metadata equals these values "
                                          "(compared as text), e.g. {\"year\": 2024}.")] = None,
) -> CallToolResult:
    """Hybrid search (vector + BM25) of the knowledge bases this key reaches. Returns a verdict (answered: the
    passages hold the answer; uncertain: the best found, which may not answer; not_found: nothing relevant, the
    passages are the nearest misses) and passages with text, document (id, title), section, pages, relevance
    (0-1) and chunk id. 检索知识库，返回判定与带出处的段落。"""
    return await _run(_search, query=query, kb_ids=kb_ids, top_k=top_k, metadata=metadata)


@server.tool(title="询问助手 Ask the assistant")
async def ask_assistant(
    question: Annotated[str, Field(description=f"The question, at most {MAX_QUERY_CHARS} characters.")],
    conversation_id: Annotated[int | None, Field(description="Continue this conversation (the conversation_id "
                                                 "of an earlier answer); omitted: a new conversation.")] = None,
) -> CallToolResult:
    """Ask this key's assistant (an assistant key only): the answer from its knowledge bases with numbered
    citations [n] (document, section, pages, relevance), its verdict and the conversation id to continue it.
    向助手提问，返回带引用的回答。"""
    return await _run(_ask, question=question, conversation_id=conversation_id)
