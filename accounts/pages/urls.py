"""The console's people routes: /people/ (accounts, groups, invitations), /account/ and /invite/<token>/."""
from django.urls import path

from accounts.pages import groups, invitations, people

urlpatterns = [
    path("people/", people.people_page, name="people"),
    path("people/<int:user_id>/", people.person_page, name="person"),
    path("people/groups/", groups.groups_page, name="groups"),
    path("people/groups/<int:group_id>/", groups.group_page, name="group"),
    path("people/invitations/", invitations.invitations_page, name="invitations"),
    path("people/invitations/<int:invitation_id>/revoke/", invitations.invitation_revoke_page, name="invitation-revoke"),
    path("account/", people.account_page, name="account"),
    path("invite/<str:token>/", invitations.invitation_page, name="invitation"),
]
