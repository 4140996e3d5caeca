"""Language-model endpoints set up in the console: OpenAI-compatible services, their encrypted keys, the site's default."""
