"""SearchRequest: what one search asks for, in one frozen object passed down the call chain unchanged."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .protocols import SearchFilters


@dataclass(frozen=True)
class SearchRequest:
    """One search: the query and every option of it (the KBs and the caller's scope travel beside it).

    ``top_k`` None: the largest ``kb.top_k``. ``rerank`` None: each KB's own ``rerank`` setting.
    ``expand_neighbours`` adds that many chunks before and after each result to its content (same
    document); ``merge_adjacent`` merges results that are adjacent chunks of one document into the
    higher-ranked one; ``continue_announced`` appends the next chunk of its document to a result that
    ends announcing it (「标准如下：」 before a table split off into a chunk of its own). The last three
    are what chat asks for (``context``).
    """

    query: str
    mode: str = "hybrid"
    top_k: int | None = None
    filters: SearchFilters = field(default_factory=SearchFilters)
    rerank: bool | None = None
    debug: bool = False
    expand_neighbours: int = 0
    merge_adjacent: bool = False
    continue_announced: bool = False

    @property
    def assembles_context(self) -> bool:
        """Whether the results get more than their own chunk (``context.expand``)."""
        return self.expand_neighbours > 0 or self.merge_adjacent or self.continue_announced

    def cache_key_parts(self) -> dict[str, Any]:
        """Every option that changes the result, as plain values (``debug`` is never cached, so left out)."""
        parts = asdict(self)
        parts.pop("debug")
        return parts
