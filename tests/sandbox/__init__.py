"""Tests of sdqos.sandbox."""
