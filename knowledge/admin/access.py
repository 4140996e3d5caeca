"""What every knowledge admin page shares: access by KB role, service refusals as messages, inline templates."""
from __future__ import annotations

from functools import cache

from django.contrib import messages
from django.http import HttpRequest, HttpResponseRedirect
from django.template import engines

from core.errors import ApplicationError
from knowledge.access import has_role, kbs_for_user
from knowledge.models import KnowledgeBase, Role


class RoleAccessMixin:
    """Any active staff user reaches these pages; their KB roles decide what they see and change.

    ``change_role`` is the least role needed to change (and delete) an object.
    """

    change_role: Role = Role.EDITOR

    def kb_of(self, obj) -> KnowledgeBase:
        return obj.kb

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request, obj=None) -> bool:
        if not self.has_module_permission(request):
            return False
        return obj is None or has_role(user=request.user, kb=self.kb_of(obj), min_role=Role.VIEWER)

    def has_change_permission(self, request, obj=None) -> bool:
        if not self.has_module_permission(request):
            return False
        if obj is None:
            return request.user.is_superuser or kbs_for_user(user=request.user, min_role=self.change_role).exists()
        return has_role(user=request.user, kb=self.kb_of(obj), min_role=self.change_role)

    def has_delete_permission(self, request, obj=None) -> bool:
        return self.has_change_permission(request, obj)

    def get_deleted_objects(self, objs, request):
        # Deleting a KB or a document removes its chunks (and index) through the
        # service; the role checked on the object itself is what authorises that,
        # not the per-model delete permissions of the read-only chunk/index admins.
        # The objects selected themselves still need the permission.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        own = {p for p in perms_needed if p == self.model._meta.verbose_name}
        return deleted, counts, own, protected

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # A service refusing a save (name taken, bad setting...) rolls the admin's
        # transaction back; show its message instead of a 500.
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as exc:
            self.message_user(request, f"{exc.message} ({exc.code})", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


@cache
def inline_template(source: str):
    """A Django template from source text, compiled once (the admin pages keep theirs beside their code)."""
    return engines["django"].from_string(source)
