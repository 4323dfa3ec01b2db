"""Embedded demo data: a procedural IDC generator writing a real raw-release format."""
