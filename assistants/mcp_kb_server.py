"""The per-KB MCP server at ``/mcp/kb/<id>/``: the search of that one KB, for a KB key of it or a token bound to it.

The transport (``assistants.mcp_http``) lets in only a KB key of this KB or an OAuth token issued for this very
address (assistants/mcp_auth/bearer.py); the caller then reads like a KB key, so the search goes through
``assistants.services.key_search``, which re-checks in the query what the key's creator (or the signed-in person)
may read now, documents restricted to groups included.
"""
from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from assistants.mcp_server import READ_ONLY, _run
from assistants.mcp_tools import Caller, kbs_listing, knowledge_search
from chat.services import in_thread
from knowledge.services.query_input import MAX_QUERY_CHARS, MAX_TOP_K

INSTRUCTIONS = (
    "One 知库 zhiku knowledge base. describe_knowledge_base names it; search_knowledge returns passages with their "
    "document, section, pages and relevance, and a verdict (answered / uncertain / not_found: say so rather than "
    "guess when it is not_found)."
)

kb_server = MCPServer("zhiku-kb", title="知库 zhiku (one knowledge base)", instructions=INSTRUCTIONS, version="1")


async def _describe(caller: Caller) -> dict[str, Any]:
    listed = await in_thread(kbs_listing)(caller)
    return {"knowledge_base": listed["knowledge_bases"][0]}


async def _search(caller: Caller, **arguments: Any) -> dict[str, Any]:
    return await in_thread(knowledge_search)(caller, **arguments)


@kb_server.tool(title="知识库信息 Describe the knowledge base", annotations=READ_ONLY)
async def describe_knowledge_base() -> CallToolResult:
    """This knowledge base: id, name, description, document and chunk counts. 此知识库的名称、说明与规模。"""
    return await _run(_describe)


@kb_server.tool(title="检索知识库 Search knowledge", annotations=READ_ONLY)
async def search_knowledge(
    query: Annotated[str, Field(description=f"The question or keywords (Chinese or English), at most {MAX_QUERY_CHARS} "
                                            "characters.")],
    top_k: Annotated[int | None, Field(description=f"At most this many passages (1-{MAX_TOP_K}); omitted: the "
                                       "knowledge base's setting.")] = None,
    metadata: Annotated[dict[str, str | int | float | bool] | None,
                        Field(description="Only passages whose chunk or document metadata equals these values "
                                          "(compared as text), e.g. {\"year\": 2024}.")] = None,
) -> CallToolResult:
    """Hybrid search (vector + BM25) of this knowledge base. Returns a verdict (answered / uncertain / not_found)
    and passages with text, document (id, title), section, pages, relevance (0-1) and chunk id.
    检索此知识库，返回判定与带出处的段落。"""
    return await _run(_search, query=query, top_k=top_k, metadata=metadata)
