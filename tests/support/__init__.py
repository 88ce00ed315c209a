"""Test doubles shared by every test package and the benchmarks: the fake provider server (``sse_server``), a
person at the approval seam (``approver``), replay-script writing (``scripts``) and a clock that never waits
(``clock``). ``plugin`` registers their fixtures for the whole suite (from ``tests/conftest.py``)."""
