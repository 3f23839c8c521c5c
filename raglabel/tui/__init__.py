"""The Textual grading app: the only package of raglabel that imports Textual."""
