"""The agent loop, the tool-call pipeline and the ``Session`` facade every surface talks to."""

from seepient.runtime.session import Session, SessionOptions, TurnOutcome

__all__ = ["Session", "SessionOptions", "TurnOutcome"]
