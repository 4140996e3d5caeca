"""django-csp's middleware, with the site's own websocket address in ``connect-src``.

The chat page opens ``ws://<host>/ws/chat/`` (``wss://`` over HTTPS). CSP Level 3 counts that as
``'self'``, but browsers that predate it (Safari before 15.4) do not, so the address is named too:
the request's own scheme and host as Django validates them (``request.get_host()`` checks
``ALLOWED_HOSTS``; ``request.is_secure()`` honours ``SECURE_PROXY_SSL_HEADER``). The policy itself
is ``CONTENT_SECURITY_POLICY`` in config/settings.py.
"""
from __future__ import annotations

from csp.middleware import CSPMiddleware as _CSPMiddleware
from csp.middleware import PolicyParts
from django.core.exceptions import DisallowedHost


class CSPMiddleware(_CSPMiddleware):
    def get_policy_parts(self, request, response, report_only: bool = False) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        try:
            host = request.get_host()
        except DisallowedHost:
            return parts
        update = dict(parts.update or {})  # the view's own csp_update, if any, is not changed
        own = f"{'wss' if request.is_secure() else 'ws'}://{host}"
        update["connect-src"] = [*(update.get("connect-src") or []), own]
        parts.update = update
        return parts
