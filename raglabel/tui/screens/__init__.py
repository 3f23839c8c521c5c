"""Screens: each asks the app's session for data and hands it to its widgets."""
