"""A warm start for ``seepient run`` and the TUI: a per-user process that has already imported the runtime forks,
for each start, a child that takes on the calling process's terminal, directory, environment and limits and runs the
command there, so a run does not pay ~0.4 s of imports. ``place`` names the socket, ``client`` is the
console script's side, ``server`` and ``runner`` the warm process's; ``docs/security.md`` says why it is safe.

Linux only (it rests on SCM_RIGHTS, pidfds and /proc); everything here is standard library, so the client costs
little more than the interpreter's own start.
"""
