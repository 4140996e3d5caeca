"""The chat-bot channels' REST API under /api/: an assistant's channels, each one's recent events and its self-test.

Who may use it is who may manage the assistant (``assistants.services.assistant_get_for_user``: its owner, or a
superuser; anyone else's assistant is a 404). Credentials are write-only: a response names the stored ones only.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from assistants.services import assistant_get_for_user
from bots import serializers as s
from bots.kinds import describe
from bots.selftest import channel_test
from bots.services import channel_create, channel_delete, channel_get, channel_update, channels_of
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from core.http.address import public_base

EVENTS_SHOWN = 50


def _channel(request, assistant_id: int, channel_id: int):
    assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
    return channel_get(assistant=assistant, channel_id=channel_id)


class ChannelListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.ChannelOutput(many=True), **errors(404)}, summary=_("The assistant's chat-bot channels"))
    def get(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        return self.paginated(channels_of(assistant), s.ChannelOutput)

    @extend_schema(request=s.ChannelCreateInput, responses={201: s.ChannelOutput, **errors(404, 409)},
                   summary=_("Add a Feishu, DingTalk or WeCom channel to the assistant"),
                   description="The kind's required settings and credentials must be given (GET /api/bot-kinds/); "
                               "a missing or malformed one is 400 `bot_channel_invalid`, a name the assistant's "
                               "channels already use 409 `bot_channel_name_taken`. `callback_url` is the path "
                               "to give the platform.")
    def post(self, request, assistant_id: int):
        assistant = assistant_get_for_user(user=request.user, assistant_id=assistant_id)
        data = parse(s.ChannelCreateInput, request.data)
        channel = channel_create(assistant=assistant, **data)
        return Response(s.ChannelOutput(channel).data, status=status.HTTP_201_CREATED)


class ChannelDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(summary=_("A chat-bot channel of the assistant"), responses={200: s.ChannelOutput, **errors(404)})
    def get(self, request, assistant_id: int, channel_id: int):
        return Response(s.ChannelOutput(_channel(request, assistant_id, channel_id)).data)

    @extend_schema(request=s.ChannelInput(partial=True), responses={200: s.ChannelOutput, **errors(404, 409)},
                   summary=_("Change a channel: name, settings, credentials (merged), enabled"))
    def patch(self, request, assistant_id: int, channel_id: int):
        channel = _channel(request, assistant_id, channel_id)
        data = parse(s.ChannelInput, request.data, partial=True)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        return Response(s.ChannelOutput(channel_update(channel=channel, **data)).data)

    @extend_schema(responses={204: None, **errors(404)}, summary=_("Remove a channel: its callback URL stops at once"))
    def delete(self, request, assistant_id: int, channel_id: int):
        channel_delete(channel=_channel(request, assistant_id, channel_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ChannelEventsView(APIView):
    @extend_schema(responses={200: s.EventOutput(many=True), **errors(404)},
                   summary=_("The channel's latest received questions and how each reply went (newest first)"))
    def get(self, request, assistant_id: int, channel_id: int):
        channel = _channel(request, assistant_id, channel_id)
        return Response(s.EventOutput(channel.events.order_by("-id")[:EVENTS_SHOWN], many=True).data)


class ChannelTestView(APIView):
    @extend_schema(request=None, responses={200: s.TestOutput, **errors(404)},
                   summary=_("What can be verified about a channel: its callback path, its credentials, its address"),
                   description="A signed sample event through the channel's callback, an access token asked of the "
                               "platform with the stored credentials, and the callback URL's host. `ok` is false when "
                               "a step failed (its `detail` says why); `complete` is true only when, besides, nothing "
                               "stayed `unverified` and the address is public (docs/integrations.md).")
    def post(self, request, assistant_id: int, channel_id: int):
        return Response(channel_test(_channel(request, assistant_id, channel_id), base_url=public_base(request)))


class KindListView(APIView):
    @extend_schema(responses={200: s.KindOutput(many=True)}, summary=_("The kinds of chat-bot channel and their fields"))
    def get(self, request):
        return Response(describe())
