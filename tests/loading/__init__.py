"""Tests of sdqos.loading."""
