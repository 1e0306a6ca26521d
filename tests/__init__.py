"""sdqos test-suite."""
