"""Keyword streaming: continuous audio through the deployed pipeline, on the device and the host."""
