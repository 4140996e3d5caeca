"""``{% mcp_grants %}``: the MCP clients the signed-in person let in, for the API tokens page (accounts/, a floor
below the assistants, shows them through this tag rather than importing them)."""
from __future__ import annotations

from django import template

from assistants.mcp_auth.grants import grants_of

register = template.Library()


@register.inclusion_tag("assistants/_mcp_grants.html", takes_context=True)
def mcp_grants(context):
    request = context["request"]
    return {"grants": grants_of(request.user), "csrf_token": context.get("csrf_token")}
