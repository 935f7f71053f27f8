"""Plot and markdown helpers for generated result pages (matplotlib, Agg backend)."""
