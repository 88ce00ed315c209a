"""A tiny calculator with a bug for the Seepient demo to fix."""


def add(a, b):
    return a - b


def multiply(a, b):
    return a * b
