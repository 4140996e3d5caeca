"""People API routes under /api/people/ and the caller's own preferences under /api/account/ (ids use <int:>
converters: a malformed id is a 404, never a 500)."""
from django.urls import path

from accounts.api import groups, invitations, preferences, search, users

urlpatterns = [
    path("account/preferences/", preferences.PreferencesView.as_view(), name="account-preferences"),
    path("people/search/", search.PeopleSearchView.as_view(), name="people-search"),
    path("people/users/", users.UserListView.as_view(), name="people-user-list"),
    path("people/users/<int:user_id>/", users.UserDetailView.as_view(), name="people-user-detail"),
    path("people/users/<int:user_id>/password/", users.UserPasswordView.as_view(), name="people-user-password"),
    path("people/groups/", groups.GroupListView.as_view(), name="people-group-list"),
    path("people/groups/<int:group_id>/", groups.GroupDetailView.as_view(), name="people-group-detail"),
    path("people/groups/<int:group_id>/members/", groups.GroupMemberListView.as_view(), name="people-group-members"),
    path("people/groups/<int:group_id>/members/<int:user_id>/", groups.GroupMemberDetailView.as_view(),
         name="people-group-member"),
    path("people/groups/<int:group_id>/managers/", groups.GroupManagerListView.as_view(), name="people-group-managers"),
    path("people/groups/<int:group_id>/managers/<int:user_id>/", groups.GroupManagerDetailView.as_view(),
         name="people-group-manager"),
    path("people/invitations/", invitations.InvitationListView.as_view(), name="people-invitation-list"),
    path("people/invitations/<int:invitation_id>/", invitations.InvitationDetailView.as_view(),
         name="people-invitation-detail"),
]
