"""The turns of ``POST /v1/responses``: which assistant answers, and the stored responses a follow-up continues.

A stored response is the turn it was answered by, in the chat's own tables: a conversation of the key's assistant
on the ``api`` channel whose ``visitor`` is the key (``visitor_of``), its question and answer messages, the
response id naming the answer message (``responses_wire.response_id``). ``previous_response_id`` is looked up
there, so a response of another key, of another assistant, of the chat-completions API or given with
``store: false`` is ``previous_response_not_found`` (404); the follow-up reads the turns up to that response as
its history (redacted for what the owner may read now, ``chat.services.history_pairs``), and the chat's
follow-up rewriting (chat/rewrite.py) does the rest.
"""
from __future__ import annotations

from assistants.errors import AssistantsError
from assistants.models import ApiKey
from assistants.responses_wire import ResponsesRequest, message_id_of
from assistants.services import HISTORY_TURNS, assistant_turn_start
from chat.models import Channel, Message, Role
from chat.services import Turn, history_pairs
from core.errors import fail


def visitor_of(key: ApiKey) -> str:
    """The stored responses of one key are its own: another key, even of the same assistant, cannot continue them."""
    return f"api-key-{key.pk}"


def previous_answer(key: ApiKey, value: str) -> Message:
    """The answer message of the stored response ``value`` of ``key``; 404 ``previous_response_not_found`` else."""
    message_id = message_id_of(value)
    found = None if message_id is None else (
        Message.objects.select_related("conversation")
        .filter(pk=message_id, role=Role.ASSISTANT, conversation__assistant=key.target_assistant,
                conversation__channel=Channel.API, conversation__visitor=visitor_of(key)).first())
    if found is None:
        raise fail(AssistantsError.PREVIOUS_RESPONSE_NOT_FOUND, id=value[:100], extra={"param": "previous_response_id"})
    return found


def response_turn_start(key: ApiKey, asked: ResponsesRequest) -> Turn:
    """The turn answering ``asked`` as the key's assistant; reads and writes the database.

    ``model``, when given, must name the key's assistant (its name or id): 404 ``model_not_found`` else. With
    ``previous_response_id`` the turns of that response's conversation up to it (the last ``HISTORY_TURNS``) come
    before the history ``input`` itself holds; the new turn goes on in that conversation when the response was its
    latest, else (a second follow-up of one response: a branch) in a new one. ``store: false``: a conversation no
    key can continue.
    """
    assistant = key.target_assistant
    if asked.model and asked.model not in (assistant.name, str(assistant.pk)):
        raise fail(AssistantsError.MODEL_NOT_FOUND, model=asked.model[:100], assistant=assistant.name, extra={"param": "model"})
    history, conversation_id = list(asked.history), None
    if asked.previous_response_id is not None:
        previous = previous_answer(key, asked.previous_response_id)
        thread = previous.conversation.messages
        earlier = list(thread.filter(id__lte=previous.pk).order_by("-id")[: 2 * HISTORY_TURNS])[::-1]
        history = history_pairs(user=assistant.owner, messages=earlier) + history
        if asked.store and not thread.filter(id__gt=previous.pk).exists():
            conversation_id = previous.conversation_id
    return assistant_turn_start(assistant=assistant, question=asked.question, channel=Channel.API,
                                visitor=visitor_of(key) if asked.store else "", conversation_id=conversation_id,
                                history=history, max_tokens=asked.max_output_tokens)
