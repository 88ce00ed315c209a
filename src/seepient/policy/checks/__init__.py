"""The checks of policy, one module per kind of prepared action; ``PolicyEngine`` picks one by payload type.

Each check is a function of the engine's ``Decider`` (consent mode, rules, path guard, fetch address policy)
and the action, returning a ``Verdict``; no check imports the engine.
"""
