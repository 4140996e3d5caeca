"""The one outbound HTTP client: every URL the server fetches is parsed once, resolved once and connected to the address checked."""
