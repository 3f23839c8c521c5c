"""Widgets: they are given data and send messages up; none of them reads the project."""
