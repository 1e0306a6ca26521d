"""Tests of sdqos.kube."""
