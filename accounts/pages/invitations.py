"""/people/invitations/ (staff and KB owners): make an invitation link, see and withdraw one's links;
/invite/<token>/: the invitee creates an account (or signs in) and accepts (accounts/people/invitations.py)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.pages.common import attempt
from accounts.pages.forms import AcceptForm, InvitationForm
from accounts.people import invitations as services
from core.errors import ApplicationError
from knowledge.access import kbs_for_user
from knowledge.models import KnowledgeBase, Role

KBS_SHOWN = 100
PASSWORD_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _invitable_kbs(user) -> list[KnowledgeBase]:
    qs = KnowledgeBase.objects.all() if user.is_staff else kbs_for_user(user=user, min_role=Role.OWNER)
    return list(qs.order_by("name", "id")[:KBS_SHOWN])


def _create(request, form: InvitationForm) -> dict | None:
    """The new invitation and its link, or None (the reason is on the form or in the messages)."""
    grants = [services.Grant(kb=kb, role=form.cleaned_data[name]) for kb, name in form.kb_fields
              if form.cleaned_data.get(name)]
    try:
        invitation, token = services.invitation_create(
            actor=request.user, grants=grants, email=form.cleaned_data["email"],
            days=form.cleaned_data["expires_in_days"], note=form.cleaned_data["note"])
    except ApplicationError as exc:
        form.add_error(None, exc.message)
        return None
    url = request.build_absolute_uri(reverse("invitation", kwargs={"token": token}))
    if form.cleaned_data["send"]:
        attempt(request, lambda: services.invitation_send(invitation=invitation, url=url),
                gettext("The link was sent to %(email)s.") % {"email": invitation.email})
    return {"invitation": invitation, "url": url}


@login_required
@never_cache
@require_http_methods(["GET", "POST"])
def invitations_page(request: HttpRequest) -> HttpResponse:
    """邀请: a form to invite someone with roles on the caller's KBs, and the caller's invitations (staff: all)."""
    kbs = _invitable_kbs(request.user)
    if not request.user.is_staff and not kbs:
        raise PermissionDenied("Only staff and knowledge base owners invite people.")
    form = InvitationForm(request.POST if request.method == "POST" else None, kbs=kbs)
    created = _create(request, form) if request.method == "POST" and form.is_valid() else None
    invitations = list(services.invitations_visible(user=request.user)[:100])
    for invitation in invitations:
        invitation.state = services.invitation_state(invitation)
    return render(request, "accounts/invitations.html", {
        "form": form, "created": created, "invitations": invitations,
        "email_enabled": settings.ZHIKU_EMAIL_ENABLED, "role_labels": {r.value: r.label for r in Role}})


@login_required
@require_POST
def invitation_revoke_page(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = services.invitations_visible(user=request.user).filter(pk=invitation_id).first()
    if invitation is not None:
        attempt(request, lambda: services.invitation_revoke(invitation=invitation), gettext("The invitation is withdrawn."))
    return redirect("invitations")


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    """The link's page: who invites, to what; a form to create the account, or accept as the signed-in person."""
    try:
        invitation = services.invitation_for_token(token)
    except ApplicationError as exc:
        return render(request, "accounts/invitation_gone.html", {"message": exc.message}, status=exc.status_code)
    password_open = not settings.ZHIKU_SSO_ONLY
    form = AcceptForm(request.POST if request.method == "POST" and not request.user.is_authenticated else None,
                      initial={"email": invitation.email})
    try:
        if request.method == "POST" and request.user.is_authenticated:
            services.invitation_accept(token=token, user=request.user)
            return redirect("/")
        if request.method == "POST" and password_open and form.is_valid():
            user = services.invitation_accept_new(token=token, username=form.cleaned_data["username"],
                                                  password=form.cleaned_data["password"], email=form.cleaned_data["email"])
            login(request, user, backend=PASSWORD_BACKEND)
            return redirect("/")
    except ApplicationError as exc:
        if exc.status_code == 410:       # spent, withdrawn or its maker's right gone between the page and the post
            return render(request, "accounts/invitation_gone.html", {"message": exc.message}, status=410)
        field = next(iter(exc.extra.get("fields", {})), None)
        form.add_error(field if field in form.fields else None, exc.message)
    return render(request, "accounts/invitation.html", {
        "invitation": invitation, "grants": invitation.grants.select_related("kb"), "form": form,
        "password_open": password_open, "sso_enabled": settings.ZHIKU_OIDC_ENABLED,
        "sso_label": settings.ZHIKU_OIDC_BUTTON_LABEL, "next": request.path})
