"""Tests of sdqos.cli."""
