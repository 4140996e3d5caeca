"""/people/groups/: staff create groups; /people/groups/<id>/: its members and managers. Staff rename, delete and
name managers; staff and the group's managers add members (picked with static/zhiku/picker.js) and remove them."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_http_methods

from accounts.models import GroupManager, SsoGroup
from accounts.pages.common import attempt
from accounts.pages.forms import GroupForm, PickForm
from accounts.people import groups as services

User = get_user_model()


@login_required
@require_http_methods(["GET", "POST"])
def groups_page(request: HttpRequest) -> HttpResponse:
    """分组: every group (staff) or those the caller manages, with member counts; staff create one here."""
    form = GroupForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        if not request.user.is_staff:
            raise PermissionDenied("Only staff can create groups.")
        made: dict[str, Group] = {}
        if form.is_valid() and attempt(request, lambda: made.setdefault("g", services.group_create(
                name=form.cleaned_data["name"])), gettext("Created the group.")):
            return redirect("group", group_id=made["g"].pk)
        return redirect("groups")
    visible = services.groups_visible(user=request.user)
    if not request.user.is_staff and not visible.exists():
        raise PermissionDenied("Only staff and group managers see groups.")
    groups = visible.annotate(member_count=Count("user", filter=Q(user__is_active=True))).order_by("name", "id")
    return render(request, "accounts/groups.html", {"groups": groups, "form": form,
                                                    "sso_ids": set(SsoGroup.objects.values_list("group_id", flat=True))})


def _picked(request) -> object | None:
    form = PickForm(request.POST)
    return User.objects.filter(pk=form.cleaned_data["user_id"]).first() if form.is_valid() else None


def _act(request, group, action: str) -> bool:
    """Run one of the group page's actions; False when the group is gone (deleted)."""
    staff_actions = {"rename", "delete", "add_manager", "remove_manager"}
    if action in staff_actions and not request.user.is_staff:
        raise PermissionDenied("Only staff can do this.")
    done = gettext("Saved.")
    if action == "rename":
        form = GroupForm(request.POST)
        if form.is_valid():
            attempt(request, lambda: services.group_rename(group=group, name=form.cleaned_data["name"]), done)
    elif action == "delete":
        services.group_delete(group=group)
        attempt(request, lambda: None, gettext("Deleted the group %(name)s.") % {"name": group.name})
        return False
    elif action in ("add_member", "add_manager", "remove_member", "remove_manager"):
        user = _picked(request)
        if user is None:
            attempt(request, lambda: None, "")
            return True
        change = {"add_member": services.group_member_add, "remove_member": services.group_member_remove,
                  "add_manager": services.group_manager_add, "remove_manager": services.group_manager_remove}[action]
        attempt(request, lambda: change(group=group, user=user), done)
    return True


@login_required
@ensure_csrf_cookie
@require_http_methods(["GET", "POST"])
def group_page(request: HttpRequest, group_id: int) -> HttpResponse:
    """A group: its members and managers; a group the caller may not open is a 404."""
    group = services.groups_visible(user=request.user).filter(pk=group_id).first()
    if group is None:
        raise Http404("Group not found.")
    if request.method == "POST":
        kept = _act(request, group, request.POST.get("action", ""))
        return redirect("group", group_id=group.pk) if kept else redirect("groups")
    caller = request.user
    assert caller.is_authenticated  # login_required
    return render(request, "accounts/group.html", {
        "group": group, "members": group.user_set.order_by("username", "id"),
        "managers": User.objects.filter(managed_groups__group=group).order_by("username", "id"),
        "sso": SsoGroup.objects.filter(group=group).exists(), "is_manager": GroupManager.objects.filter(
            group=group, user=caller).exists(),
    })
