"""The pure domain: tasks and their lifecycle, events, diffs and briefs. No I/O here."""
