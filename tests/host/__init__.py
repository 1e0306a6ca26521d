"""Tests of sdqos.host."""
