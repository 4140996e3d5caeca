"""People, groups, group managers and invitations: the services and reads behind the console's people pages and the API."""
