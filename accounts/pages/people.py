"""/people/ (staff): every account, searched and paged, and creating one; /people/<id>/ an account's page with its
flags, password and access; /account/ a person's own page. Changes call accounts/people/users.py."""
from __future__ import annotations

from typing import TypedDict

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from accounts.pages.common import PER_PAGE, attempt, staff_required
from accounts.pages.forms import PasswordForm, UserCreateForm
from accounts.people.selectors import person_access, person_groups, users_list
from accounts.people.users import user_create, user_reset_link, user_set_password, user_update
from core.errors import ApplicationError

User = get_user_model()


@staff_required
@require_http_methods(["GET", "POST"])
def people_page(request: HttpRequest) -> HttpResponse:
    """人员: accounts by username, searched by name, username or e-mail, 25 a page; a form to create one."""
    form = UserCreateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_create(**form.cleaned_data)
        except ApplicationError as exc:
            field = next(iter(exc.extra.get("fields", {})), None)
            form.add_error(field if field in form.fields else None, exc.message)
        else:
            attempt(request, lambda: None, gettext("Created %(name)s.") % {"name": user.username})
            return redirect("person", user_id=user.pk)
    q = request.GET.get("q", "").replace("\x00", "").strip()[:100]
    page = Paginator(users_list(q=q), PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "accounts/people.html", {"page": page, "q": q, "form": form})


def _person_context(person) -> dict:
    return {"person": person, "access": person_access(person=person), "groups": person_groups(person=person),
            "sso": person.sso_identities.exists()}


class _Flags(TypedDict, total=False):
    is_active: bool
    is_staff: bool


def _act(request, person, action: str) -> str | None:
    """Run one of the person page's actions; a reset link when one was issued."""
    actor, done = request.user, gettext("Saved.")
    simple: dict[str, _Flags] = {"deactivate": {"is_active": False}, "reactivate": {"is_active": True},
              "make_staff": {"is_staff": True}, "remove_staff": {"is_staff": False}}
    if action in simple:
        attempt(request, lambda: user_update(actor=actor, user=person, **simple[action]), done)
    elif action == "set_password":
        form = PasswordForm(request.POST)
        if form.is_valid():
            attempt(request, lambda: user_set_password(actor=actor, user=person, password=form.cleaned_data["password"]),
                    gettext("The password is set; the person's API tokens are revoked."))
    elif action in ("reset_link", "send_reset_link"):
        link: dict[str, str] = {}
        send = action == "send_reset_link"
        ok = attempt(request, lambda: link.setdefault("url", user_reset_link(
            actor=actor, user=person, base_url=request.build_absolute_uri("/"), send=send)),
            gettext("The link was sent to %(email)s.") % {"email": person.email} if send else "")
        return link.get("url") if ok and not send else None
    return None


@staff_required
@never_cache
@require_http_methods(["GET", "POST"])
def person_page(request: HttpRequest, user_id: int) -> HttpResponse:
    """An account (staff): its flags, password, knowledge bases and roles (direct and through groups), groups."""
    person = User.objects.filter(pk=user_id).first()
    if person is None:
        raise Http404("User not found.")
    reset_url = None
    if request.method == "POST":
        reset_url = _act(request, person, request.POST.get("action", ""))
        if reset_url is None:
            return redirect("person", user_id=person.pk)
        person.refresh_from_db()
    return render(request, "accounts/person.html", {**_person_context(person), "reset_url": reset_url,
                                                    "manage": True, "password_form": PasswordForm()})


@login_required
def account_page(request: HttpRequest) -> HttpResponse:
    """我的账号: the signed-in person's own knowledge bases, roles and groups."""
    return render(request, "accounts/person.html", {**_person_context(request.user), "manage": False})
