"""Audio for keyword spotting: clips, the deployed frontends, and the keyword demo set."""
