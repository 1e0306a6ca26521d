"""Tests against a real cgroup v2 guest (tests/v2/guest.py)."""
