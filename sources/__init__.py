"""Sources: connectors that keep a KB in sync with where its documents live (web sites, Git, buckets, Feishu, Yuque)."""
