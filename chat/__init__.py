"""Conversations, messages, the chat websocket and LLM clients."""
