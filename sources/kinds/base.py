"""The one protocol every kind of source speaks, and the values it yields.

A connector reaches one kind of place (a web site, a Git repository, a bucket, a Feishu space, a Yuque repo) and
knows nothing of Django, documents or ingestion: the runner (sources/run.py) calls ``scan`` with what the previous
run kept of each item (:class:`Known`: its revision and state) and turns each :class:`Fetched`, :class:`Unchanged`
or :class:`Failed` it yields into an ingestion. Only a scan that ends ``complete`` (:class:`ScanResult`) removes
the items it no longer saw (docs/ingestion.md, "数据源 Sources").
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from core.net.errors import OutboundError

if TYPE_CHECKING:
    from django.utils.functional import Promise  # a gettext_lazy string

# A connector's own failures and the outbound client's refusals (core/net/) are one class, read alike by a run.
SourceError = OutboundError


@dataclass(frozen=True)
class Known:
    """What the previous run kept of one item: its revision and the connector's own state for it."""

    revision: str
    state: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Fetched:
    """A new or changed item, with its bytes."""

    key: str                   # stable identity at the source: a URL, a path, an object key, a doc token
    revision: str              # what the next scan compares against
    name: str                  # source name in the KB (unique within the source); extension picks the parser
    data: bytes
    url: str = ""              # where a reader opens it; search results and citations link here
    title: str = ""
    state: Mapping[str, Any] = field(default_factory=dict)   # JSON-serialisable, kept for the next scan


@dataclass(frozen=True)
class Unchanged:
    """An item the previous run kept whose revision still matches; nothing was downloaded."""

    key: str
    state: Mapping[str, Any] | None = None   # None: keep the stored state


@dataclass(frozen=True)
class Failed:
    """One item that could not be read; the run goes on and the previous version (if any) keeps serving."""

    key: str
    code: str
    message: str
    url: str = ""


Item = Fetched | Unchanged | Failed


@dataclass
class ScanResult:
    """Set by the connector while it scans; read by the runner when the iterator is exhausted."""

    complete: bool = True      # False: the walk was cut short, so nothing may be removed
    note: str = ""             # why it was cut short, for the run's history


@dataclass(frozen=True)
class Limits:
    """Budgets a scan must stay within (the runner passes the source's and the platform's)."""

    max_items: int = 1000
    max_bytes_per_item: int = 50 * 1024 * 1024
    timeout_s: float = 30.0


@dataclass(frozen=True)
class SettingField:
    """One setting or credential a kind takes, described for the console's form (sources/views.py).

    Optional: a kind whose class has no ``fields`` gets one JSON box for its settings and one text box per
    ``secret_fields`` name. ``label`` and ``help`` may be ``gettext_lazy`` strings. ``type``: ``text``,
    ``url``, ``number``, ``checkbox``, ``lines`` (one value a line, stored as a list) or ``secret``
    (a credential: written, never shown again).
    """

    name: str
    label: str | Promise
    type: str = "text"
    required: bool = False
    help: str | Promise = ""
    default: Any = None


class Connector(Protocol):
    """Construct with the source's settings (plain JSON) and decrypted credentials; then ``scan``."""

    kind: ClassVar[str]
    # Names of the credentials this kind takes (stored encrypted, never shown again), e.g. ("app_secret",).
    secret_fields: ClassVar[tuple[str, ...]]
    # Optional (read with ``getattr(cls, "fields", ())``): the console's form for this kind's settings and secrets.
    fields: ClassVar[tuple[SettingField, ...]]
    # Optional (read with ``getattr(cls, "check_address", None)``): a classmethod taking the cleaned settings that
    # raises ``SourceError("source_address_refused" | "source_url_invalid")`` for an address the server will refuse
    # (core/net/netguard.py ``check_when_added``), so the owner hears it when adding, not at the first run.

    @classmethod
    def clean_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Check and normalise the owner's settings; raise ``SourceError("source_settings_invalid", message)``
        naming the field that is wrong. Called when a source is added or edited, before anything is stored."""
        ...

    def __init__(self, settings: Mapping[str, Any], credentials: Mapping[str, str], *, limits: Limits) -> None: ...

    def scan(self, known: Mapping[str, Known], result: ScanResult, cancelled: Callable[[], bool]) -> Iterator[Item]:
        """Yield one entry per item now at the source. Check ``cancelled()`` between items and stop
        (setting ``result.complete = False``) when it answers True. Raise :class:`SourceError` when the
        source as a whole cannot be read."""
        ...

    def close(self) -> None: ...


REGISTRY: dict[str, type[Connector]] = {}

_Kind = TypeVar("_Kind", bound="type[Connector]")


def register(cls: _Kind) -> _Kind:
    """Class decorator: make a connector available under its ``kind``."""
    REGISTRY[cls.kind] = cls
    return cls


def connector_for(kind: str) -> type[Connector]:
    if kind not in REGISTRY:
        # Importing the kind modules registers them; done lazily so a kind's optional library
        # (boto3, trafilatura) is imported only when a source of that kind runs.
        import importlib
        try:
            importlib.import_module(f"sources.kinds.{kind}")
        except ModuleNotFoundError:
            pass
    try:
        return REGISTRY[kind]
    except KeyError:
        raise SourceError("source_kind_unknown", f"unknown source kind: {kind}") from None
