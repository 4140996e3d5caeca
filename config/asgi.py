"""ASGI entry point: HTTP through Django, websockets through Channels."""
import os

from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from core.http.disconnect import DisconnectWatch

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Static files (admin CSS/JS, page scripts) are served by the app itself so the
# one-command local run needs no collectstatic or front proxy.
# DisconnectWatch: a synchronous view can tell that its client left (core/http/disconnect.py).
django_asgi_app = DisconnectWatch(ASGIStaticFilesHandler(get_asgi_application()))

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402 - needs the apps loaded by get_asgi_application() above

from assistants.mcp_http import MCPRoute  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from chat.auth import TokenAuthMiddlewareStack  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from config import body_limits, ws_frames  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from config.daphne_http import chunked_with_length, skip_form_parsing  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from config.request_limits import RequestLimits  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from config.ws_origin import OriginCheck  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from config.ws_routing import websocket_urlpatterns  # noqa: E402 - needs the apps loaded by get_asgi_application() above
from knowledge.warmup import warm_up_in_background  # noqa: E402 - needs the apps loaded by get_asgi_application() above

# Request bodies are read by Django alone, malformed forms answered in the API's error shape.
skip_form_parsing()
# A chunked body reaches Django with its length, so a file sent chunked is read as a form (config/daphne_http.py).
chunked_with_length()
# A body over its route's limit is answered 413 as it arrives, before the rest is read (config/body_limits.py).
body_limits.install()

# URL and header limits first (414/431), then HTTP through Django, except /mcp/: the MCP server
# (assistants/mcp_http.py, the official SDK's streamable HTTP behind an API key); for websockets the origin
# is checked first (scheme, host and port: Django's CSRF origin rule, config/ws_origin.py), then
# the session cookie, then a ?token= API token.
application = RequestLimits(ProtocolTypeRouter({
    "http": MCPRoute(django_asgi_app),
    "websocket": OriginCheck(TokenAuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
}))

# Under daphne, a websocket message over ZHIKU_WS_MAX_MESSAGE_BYTES is answered with an error
# event before the connection closes with 1009 (config/ws_frames.py).
ws_frames.install()

# The first search of a process would otherwise pay jieba's dictionary load and
# the embedding model's start-up (~0.6 s); do it while the server starts.
warm_up_in_background()

# In thread mode this process ingests, so once it listens it queues the documents left pending
# (by an earlier process that died, or by manage.py bootstrap, which ingests nothing) and
# re-queues ingestions that died with an earlier process (Celery workers run their own
# sweeper: knowledge.tasks).
if settings.ZHIKU_INGEST_MODE == "thread":
    from config.listening import once_listening
    from knowledge.ingestion.recovery import start_sweeper

    start_sweeper(listening=once_listening())
    # This process also runs the sources' scheduled runs (Celery workers run their own: sources.tasks).
    from sources.schedule import start_scheduler

    start_scheduler()
