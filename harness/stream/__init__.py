"""Continuous-audio keyword spotting: event ledgers, detections, scoring policies and test-stream composition."""
