"""The console's people pages: staff manage accounts and groups, managers their groups, owners invite, people see their access."""
