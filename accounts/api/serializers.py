"""Input and output serializers of the people API: shape and type checks only (the services decide the rest)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.models import Invitation
from accounts.people.invitations import MAX_GRANTS, invitation_state
from accounts.people.selectors import mask_email
from core.api.fields import Rule, StrictInput, Text, exactly_one
from core.names import display_name
from knowledge.models import Role

User = get_user_model()


# --- users ------------------------------------------------------------------------------------------------------

class UserOutput(serializers.ModelSerializer):
    email = serializers.CharField(read_only=True, help_text="Empty when unknown")
    display_name = serializers.SerializerMethodField()
    sso = serializers.SerializerMethodField(help_text="Signs in through single sign-on (LDAP or OIDC)")

    class Meta:
        model = User
        fields = ["id", "username", "display_name", "email", "first_name", "last_name", "is_active", "is_staff",
                  "is_superuser", "sso", "last_login", "date_joined"]
        read_only_fields = fields

    def get_display_name(self, user) -> str:
        return display_name(user)

    def get_sso(self, user) -> bool:
        return bool(user.sso_identities.all())


class UserCreateInput(StrictInput):
    username = Text(max_length=150)
    password = serializers.CharField(required=False, max_length=128, trim_whitespace=False,
                                     help_text="Omitted: no usable password until a reset link or SSO sets one")
    email = Text(required=False, allow_blank=True, max_length=254)
    first_name = Text(required=False, allow_blank=True, max_length=150)
    last_name = Text(required=False, allow_blank=True, max_length=150)
    is_staff = serializers.BooleanField(required=False, default=False)


class UserUpdateInput(StrictInput):
    email = Text(required=False, allow_blank=True, max_length=254)
    first_name = Text(required=False, allow_blank=True, max_length=150)
    last_name = Text(required=False, allow_blank=True, max_length=150)
    is_active = serializers.BooleanField(required=False)
    is_staff = serializers.BooleanField(required=False)


class PasswordInput(StrictInput):
    password = serializers.CharField(required=False, max_length=128, trim_whitespace=False,
                                     help_text="The new password; omitted: a one-time reset link is issued instead")
    send = serializers.BooleanField(required=False, default=False,
                                    help_text="With no password: also e-mail the link to the person")


class PasswordOutput(serializers.Serializer):
    reset_url = serializers.CharField(allow_null=True, help_text="The one-time reset link (null when a password was set)")
    sent = serializers.BooleanField()


# --- groups -----------------------------------------------------------------------------------------------------

class GroupOutput(serializers.ModelSerializer):
    member_count = serializers.IntegerField(read_only=True)
    sso = serializers.SerializerMethodField(help_text="Kept in step with the directory: members change there")

    class Meta:
        model = Group
        fields = ["id", "name", "member_count", "sso"]
        read_only_fields = fields

    def get_sso(self, group) -> bool:
        return hasattr(group, "sso")


class GroupInput(StrictInput):
    name = Text(max_length=150)


class PersonRefInput(StrictInput):
    user_id = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    username = Text(required=False, max_length=150)

    rules = (Rule("person_required", "Exactly one of user_id or username.", exactly_one("user_id", "username"),
                  body_required=True),)


class PersonOutput(serializers.ModelSerializer):
    display_name = serializers.SerializerMethodField()

    class Meta:
        model = User
        fields = ["id", "username", "display_name", "is_active"]
        read_only_fields = fields

    def get_display_name(self, user) -> str:
        return display_name(user)


# --- the picker -------------------------------------------------------------------------------------------------

class PickedUser(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    display_name = serializers.CharField()
    email = serializers.CharField(help_text="Masked (a***@example.com) for anyone but staff; empty when unknown")


class PickedGroup(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    member_count = serializers.IntegerField()


class SearchOutput(serializers.Serializer):
    users = PickedUser(many=True)
    groups = PickedGroup(many=True)


def picked_user(user, *, staff: bool) -> dict:
    return {"id": user.pk, "username": user.username, "display_name": display_name(user),
            "email": user.email if staff else mask_email(user.email)}


# --- invitations ------------------------------------------------------------------------------------------------

class GrantInput(StrictInput):
    kb_id = serializers.IntegerField(min_value=1, max_value=2**31 - 1)
    role = serializers.ChoiceField(choices=Role.choices)


class InvitationCreateInput(StrictInput):
    email = Text(required=False, allow_blank=True, max_length=254)
    note = Text(required=False, allow_blank=True, max_length=200)
    expires_in_days = serializers.IntegerField(required=False, min_value=1, max_value=settings.ZHIKU_INVITATION_MAX_DAYS,
                                               help_text="Default ZHIKU_INVITATION_DAYS; at most ZHIKU_INVITATION_MAX_DAYS")
    roles = serializers.ListField(child=GrantInput(), max_length=MAX_GRANTS, required=False, default=list)
    send = serializers.BooleanField(required=False, default=False, help_text="Also e-mail the link to `email`")


class GrantOutput(serializers.Serializer):
    kb_id = serializers.IntegerField(source="kb.pk")
    kb_name = serializers.CharField(source="kb.name")
    role = serializers.CharField()


class InvitationOutput(serializers.ModelSerializer):
    email = serializers.CharField(read_only=True, help_text="Empty when the invitation names no address")
    roles = GrantOutput(source="grants", many=True, read_only=True)
    state = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    accepted_by = serializers.CharField(source="accepted_by.username", allow_null=True, default=None)

    class Meta:
        model = Invitation
        fields = ["id", "email", "note", "roles", "state", "created_by", "created", "expires_at", "accepted_at",
                  "accepted_by", "revoked_at"]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=["pending", "accepted", "revoked", "expired"]))
    def get_state(self, invitation) -> str:
        return invitation_state(invitation)


class InvitationCreatedOutput(InvitationOutput):
    url = serializers.CharField(help_text="The link: shown this once, never stored (only its SHA-256 is)")
    sent = serializers.BooleanField()

    class Meta(InvitationOutput.Meta):
        fields = [*InvitationOutput.Meta.fields, "url", "sent"]
