"""Tests of sdqos.reconcile."""
