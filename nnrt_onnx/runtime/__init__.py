"""Execution: graph checks shared by all devices, and the native numpy engine."""
