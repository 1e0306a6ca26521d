"""Test tables transcribed from upstream Kubernetes Go tests (pure data; see each module)."""
