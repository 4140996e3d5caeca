"""Chat REST endpoints: one's own conversations (searched, renamed, deleted), feedback on answers, and retrieval as an
agent tool."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from chat import selectors
from chat.conversations import TITLE_MAX_CHARS, conversation_delete, conversation_rename
from chat.errors import ChatError
from chat.feedback_labels import REASON_CODES, feedback_record
from chat.history import readable_view
from chat.models import Conversation, Feedback, Message, Rating
from chat.tools import TOOL_SCHEMA, format_for_tool_output
from core.api.fields import ItemList, Rule, StrictInput, Text, only_with
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.schema import errors
from core.errors import fail
from core.safejson import check_characters
from knowledge.retrieval.request import SearchRequest
from knowledge.services.query_input import MAX_KBS, MAX_QUERY_CHARS, MAX_TOP_K
from knowledge.services.search import Search, search


class ConversationOutput(serializers.ModelSerializer):
    message_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Conversation
        fields = ["id", "title", "kb_ids", "created_at", "updated_at", "message_count"]


class MessageOutput(serializers.ModelSerializer):
    """A saved message as the reader may read it now (``chat/history.py``): with ``context["readable"]``,
    sources the reader can no longer read are ``{"n", "redacted": true}`` and an answer given from them is withheld."""

    feedback = serializers.SerializerMethodField()
    content_redacted = serializers.SerializerMethodField(
        help_text="The answer text is withheld: it was given from a passage the reader can no longer read.")

    class Meta:
        model = Message
        fields = ["id", "role", "content", "content_redacted", "rewritten_query", "sources", "citations", "verdict", "hit",
                  "not_found_by", "confidence", "status", "error_code", "answer_mode", "timings", "created_at", "feedback"]
        extra_kwargs = {
            "sources": {"help_text": "The chunks given to the answer, numbered as cited; one the reader can no longer "
                                     "read is `{\"n\": n, \"redacted\": true}`."},
            "citations": {"help_text": "The sources the answer cites with [n], redacted like `sources`."},
        }

    def _readable(self, message: Message):
        return (self.context.get("readable") or {}).get(message.pk)

    def get_feedback(self, message: Message) -> dict | None:
        mine = getattr(message, "my_feedback", None) or []
        return {"rating": mine[0].rating, "reason": mine[0].reason} if mine else None

    def get_content_redacted(self, message: Message) -> bool:
        readable = self._readable(message)
        return readable is not None and readable.content_redacted

    def to_representation(self, message: Message) -> dict:
        data = super().to_representation(message)
        readable = self._readable(message)
        if readable is not None:
            data.update(content=readable.content, sources=readable.sources, citations=readable.citations)
        return data


class ConversationDetailOutput(ConversationOutput):
    """The detail's shape, for the schema (the view adds messages with the caller's own feedback prefetched)."""

    messages = MessageOutput(many=True, read_only=True)

    class Meta(ConversationOutput.Meta):
        fields = ConversationOutput.Meta.fields + ["messages"]


class FeedbackInput(StrictInput):
    rating = serializers.ChoiceField(choices=Rating.choices)
    reason = Text(required=False, allow_blank=True, max_length=2000, default="")
    reason_code = serializers.ChoiceField(required=False, choices=[("", ""), *((c, c) for c in REASON_CODES)], default="",
                                          help_text="wrong_passage (with down): the answer cited the wrong passage")

    rules = (Rule("invalid_reason_code", "reason_code wrong_passage goes with rating down.",
                  only_with("reason_code", "wrong_passage", then="rating", then_value="down")),)


class FeedbackOutput(serializers.ModelSerializer):
    labelled = serializers.SerializerMethodField(help_text="The labelled question the vote made (null: none): its id "
                                              "and status, confirmed or pending (the KB's review queue)")

    class Meta:
        model = Feedback
        fields = ["id", "message", "rating", "reason", "reason_code", "labelled", "created_at", "updated_at"]

    def get_labelled(self, feedback: Feedback) -> dict | None:
        label = self.context.get("label")
        return None if label is None else {"id": label.pk, "kb_id": label.kb_id, "status": label.status}


class ConversationRenameInput(StrictInput):
    """A conversation's new title (fields other than ``title`` are 400 ``unknown_field``)."""

    title = Text(max_length=TITLE_MAX_CHARS, trim_whitespace=True,
                 help_text="The new title (surrounding spaces trimmed); the conversation keeps its place in the list")


SEARCH_MAX_CHARS = 200  # characters of the conversation list's search text


class ConversationListView(PaginatedView):
    """The caller's conversations, most recent first (paginated); ``q`` finds those whose title or messages hold it."""

    @extend_schema(summary=_("The caller's conversations, most recent first; q searches them"), parameters=[OpenApiParameter(
        "q", {"type": "string", "maxLength": SEARCH_MAX_CHARS}, required=False,
        description="Only conversations whose title or any question or answer holds this text (case-insensitive, "
                    "surrounding spaces ignored); blank: all")],
        responses={200: ConversationOutput(many=True)})
    def get(self, request):
        q = request.query_params.get("q", "")
        check_characters({"q": q})  # a NUL cannot be sent to PostgreSQL: 400 invalid_characters
        if len(q) > SEARCH_MAX_CHARS:
            raise fail(ChatError.INVALID_CONVERSATION_SEARCH, limit=SEARCH_MAX_CHARS, on_field="q")
        return self.paginated(selectors.conversation_list(user=request.user, q=q.strip()), ConversationOutput)


class ConversationDetailView(APIView):
    """One of the caller's conversations with its messages; anyone else's is a 404."""

    @extend_schema(summary=_("One of the caller's conversations with its messages"), responses={200: ConversationDetailOutput},
                   description="Each message's sources are re-checked against what the caller may read now (KB "
                   "membership, group restrictions, deleted documents): a source they can no longer read is "
                   '`{"n": n, "redacted": true}`, and an answer given from one has its `content` withheld '
                   "(`content_redacted: true`).")
    def get(self, request, conversation_id: int):
        conversation = selectors.conversation_get(user=request.user, conversation_id=conversation_id)
        messages = list(selectors.conversation_messages(user=request.user, conversation=conversation))
        data = ConversationOutput(conversation).data
        data["message_count"] = len(messages)
        # Sources re-checked against what the caller may read now, in one query (chat/history.py).
        readable = readable_view(user=request.user, messages=messages)
        data["messages"] = MessageOutput(messages, many=True, context={"readable": readable}).data
        return Response(data)

    @extend_schema(request=ConversationRenameInput, responses={200: ConversationOutput},
                   summary=_("Rename one of the caller's conversations"))
    def patch(self, request, conversation_id: int):
        title = parse(ConversationRenameInput, request.data)["title"]
        conversation = conversation_rename(user=request.user, conversation_id=conversation_id, title=title)
        data = ConversationOutput(conversation).data
        data["message_count"] = conversation.messages.count()
        return Response(data)

    @extend_schema(summary=_("Delete one of the caller's conversations with its messages"), responses={204: None})
    def delete(self, request, conversation_id: int):
        conversation_delete(user=request.user, conversation_id=conversation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FeedbackView(APIView):
    """Rate an answer up or down, with an optional reason; rating again replaces the earlier rating.

    A 👍, or a 👎 with ``reason_code: wrong_passage``, teaches: it labels the answer's first cited passage as answering
    (or not) the question, confirmed for a voter who edits the KB, else pending in the KB's review queue."""

    @extend_schema(summary=_("Rate an answer 👍 or 👎, with an optional reason"), request=FeedbackInput, responses={200: FeedbackOutput})
    def post(self, request, message_id: int):
        data = FeedbackInput(data=request.data)
        data.is_valid(raise_exception=True)
        feedback, label = feedback_record(user=request.user, message_id=message_id, **data.validated_data)
        return Response(FeedbackOutput(feedback, context={"label": label}).data)


class ToolSearchInput(StrictInput):
    query = Text(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    kb_ids = ItemList(child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), min_length=1, max_length=MAX_KBS)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, required=False)


class ToolSearchView(APIView):
    """Retrieval as an agent tool: GET gives the tool's JSON schema, POST runs it."""

    @extend_schema(summary=_("The search tool's JSON schema, for agents"), responses={200: dict})
    def get(self, request):
        return Response(TOOL_SCHEMA)

    @extend_schema(summary=_("Run the search tool"), request=ToolSearchInput, responses={200: dict, **errors(404)})
    def post(self, request):
        data = ToolSearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        result = search(Search(SearchRequest(query=v["query"], top_k=v.get("top_k")), user=request.user, kb_ids=v["kb_ids"]))
        return Response({"tool": TOOL_SCHEMA["function"]["name"], **format_for_tool_output(result, max_chunks=v.get("top_k"))})
