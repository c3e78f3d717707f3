"""Continuous-audio keyword spotting: the device pipeline and its host reference, event ledgers,
detections, scoring policies and test-stream composition."""
