"""raglabel serve: the grading app in browsers, one app process per tab."""
