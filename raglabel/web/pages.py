"""The few pages ``raglabel serve`` writes itself.

The terminal page uses textual-serve's own script, stylesheet and fonts, served from
this machine: its bundled page asks a font server on the internet for Roboto Mono,
which would leak every annotator's address to a third party and fail on a closed
network, so the page is ours and the font is the copy textual-serve ships.
"""

from __future__ import annotations

from html import escape

_STYLE = """
@font-face { font-family: "Roboto Mono"; font-style: normal;
  src: url("{static}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }
@font-face { font-family: "Roboto Mono"; font-style: italic;
  src: url("{static}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }
html, body { margin: 0; height: 100%; background: #0c181f; }
body { font-family: "Roboto Mono", monospace; color: #eef; }
#terminal { position: absolute; inset: 0; }
.note { position: absolute; inset: 0; display: none; align-items: center;
  justify-content: center; text-align: center; }
body:not(.-first-byte) .starting { display: flex; }
body.-closed .ended { display: flex; background: #0c181f; z-index: 10; }
a { color: #9cf; }
"""


def terminal_page(*, static_url: str, websocket_url: str, annotator: str, project: str) -> str:
    """The page a signed-in tab loads: one terminal wired to its own app process."""
    style = _STYLE.replace("{static}", static_url)
    title = f"raglabel: {annotator} on {project}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<link rel="stylesheet" href="{escape(static_url)}css/xterm.css">
<script src="{escape(static_url)}js/textual.js"></script>
<style>{style}</style>
</head>
<body>
<div class="note starting"><p>Starting the grading app for {escape(annotator)}&hellip;</p></div>
<div class="note ended"><p>This tab's app has ended. Every grade was saved as you gave it.<br>
<a href="">Open it again</a></p></div>
<div id="terminal" class="textual-terminal"
  data-session-websocket-url="{escape(websocket_url)}" data-font-size="16"></div>
</body>
</html>
"""


def signed_in_page(*, annotator: str, target: str) -> str:
    """The answer to an invite URL: it sets the cookie and moves on to the app.

    A page that refreshes, rather than a redirect, because a link clicked in a mail
    or chat arrives from another site, and the browser would not send a SameSite=Strict
    cookie on a redirect that is part of that cross-site navigation; a refresh from
    this page is a navigation from this site.
    """
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={escape(target)}">
<title>raglabel: signed in</title>
</head>
<body><p>Signed in as {escape(annotator)}. <a href="{escape(target)}">Open the grading app</a>.</p>
</body>
</html>
"""


def refusal_page(status: int, message: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>raglabel: {status}</title></head>
<body><h1>{status}</h1><p>{escape(message)}</p></body>
</html>
"""
