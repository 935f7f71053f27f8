"""Batch runs over JSONL files: `io` (reading, resuming, writing), `worker` (what runs on a
Dask worker or in process), `client` (chunking, scheduling and progress)."""
