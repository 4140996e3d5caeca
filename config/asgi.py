"""ASGI entry point: HTTP through Django, websockets through Channels."""
import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Static files (admin CSS/JS, page scripts) are served by the app itself so the
# one-command local run needs no collectstatic or front proxy.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat.auth import TokenAuthMiddlewareStack  # noqa: E402
from knowledge.warmup import warm_up_in_background  # noqa: E402
from config.ws_routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    # Origin checked first; then the session cookie, then a ?token= API token.
    "websocket": AllowedHostsOriginValidator(TokenAuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})

# The first search of a process would otherwise pay jieba's dictionary load and
# the embedding model's start-up (~0.6 s); do it while the server starts.
warm_up_in_background()
