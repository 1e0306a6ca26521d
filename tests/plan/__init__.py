"""Tests of sdqos.plan."""
