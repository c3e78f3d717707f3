"""LPIRC-style evaluation: the HTTP referee, accuracy-per-energy scores and their prize categories."""
