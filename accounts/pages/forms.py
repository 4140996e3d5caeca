"""The people pages' forms: field shapes and labels only; the services (accounts/people/) check the rest."""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from knowledge.models import Role


class UserCreateForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"))
    first_name = forms.CharField(max_length=150, required=False, label=_("Name"))
    email = forms.EmailField(max_length=254, required=False, label=_("E-mail"))
    password = forms.CharField(max_length=128, required=False, strip=False, label=_("Password"),
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                               help_text=_("Leave empty to give the person a one-time link to set their own."))
    is_staff = forms.BooleanField(required=False, label=_("Staff (manages people, groups and models)"))


class PasswordForm(forms.Form):
    password = forms.CharField(max_length=128, strip=False, label=_("New password"),
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))


class GroupForm(forms.Form):
    name = forms.CharField(max_length=150, label=_("Group name"))


class PickForm(forms.Form):
    """A person chosen with the picker (static/zhiku/picker.js writes the id)."""

    user_id = forms.IntegerField(min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)


class InvitationForm(forms.Form):
    email = forms.EmailField(max_length=254, required=False, label=_("E-mail (optional)"))
    note = forms.CharField(max_length=200, required=False, label=_("Note (for you)"))
    expires_in_days = forms.IntegerField(min_value=1, label=_("Valid for (days)"))
    send = forms.BooleanField(required=False, label=_("Send the link by e-mail"))

    def __init__(self, *args, kbs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["expires_in_days"] = forms.IntegerField(
            min_value=1, max_value=settings.ZHIKU_INVITATION_MAX_DAYS, initial=settings.ZHIKU_INVITATION_DAYS,
            label=_("Valid for (days)"))
        roles = [("", _("no role"))] + [(r.value, r.label) for r in Role]
        self.kb_fields = []
        for kb in kbs:
            name = f"role_{kb.pk}"
            self.fields[name] = forms.ChoiceField(choices=roles, required=False, label=kb.name,
                                                  widget=forms.Select(attrs={"aria-label": kb.name}))
            self.kb_fields.append((kb, name))

    def kb_rows(self) -> list:
        """(KB, its role field) for the template."""
        return [(kb, self[name]) for kb, name in self.kb_fields]


class AcceptForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"),
                               widget=forms.TextInput(attrs={"autocomplete": "username"}))
    email = forms.EmailField(max_length=254, required=False, label=_("E-mail"))
    password = forms.CharField(max_length=128, strip=False, label=_("Password"),
                               widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    password2 = forms.CharField(max_length=128, strip=False, label=_("Password again"),
                                widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password") != data.get("password2"):
            self.add_error("password2", _("The two passwords differ."))
        return data
