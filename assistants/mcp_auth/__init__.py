"""MCP clients' sign-in: ``/mcp/`` and ``/mcp/kb/<id>/`` as OAuth 2.1 protected resources, the platform as their
authorization server (django-oauth-toolkit), the consent page, and CORS for browser clients.

The MCP authorization specification (2025-06-18): Protected Resource Metadata (RFC 9728) and a 401 naming it,
Authorization Server Metadata (RFC 8414), dynamic client registration (RFC 7591), the authorization code with
PKCE S256, and tokens bound to one resource (RFC 8707). Settings: config/mcp_auth.py; docs/integrations.md.
"""
