"""Developer scripts run from the source tree (not installed)."""
