"""The people API under /api/people/: users (staff), groups and their members and managers, invitations, the picker."""
