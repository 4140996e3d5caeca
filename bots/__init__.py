"""Assistants answering inside Feishu, DingTalk and WeCom: channels, their signed callbacks, the replies (docs/integrations.md)."""
