"""harness: benchmark TinyML models on microcontrollers."""

__version__ = "0.1.0"
