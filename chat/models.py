"""Conversations, messages and feedback (see the chat issue)."""
