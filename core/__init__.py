"""The ground floor every app shares: the error registry, JSON helpers, database connections, the run-later
switch, the HTTP edge, the API helpers, the audit writer and the outbound HTTP client. It imports no app
(an import-linter contract in pyproject.toml), so any app may use it without a cycle; docs/architecture.md."""
