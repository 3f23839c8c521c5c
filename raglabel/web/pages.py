"""The few pages ``raglabel serve`` writes itself.

The terminal page uses textual-serve's own script, stylesheet and fonts, served from
this machine: its bundled page asks a font server on the internet for Roboto Mono,
which would leak every annotator's address to a third party and fail on a closed
network, so the page is ours and the font is the copy textual-serve ships.
"""

from __future__ import annotations

import json
from html import escape

#: The text message the server sends a tab before closing it for a reason the person
#: should read: ``["raglabel:ended", {"kind": "revoked" | "failed", "text": "..."}]``.
#: textual.js ignores message types it does not know; the page's own script shows it.
ENDED = "raglabel:ended"

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
body.-revoked .why, body.-failed .why { display: flex; background: #0c181f; z-index: 20; }
body.-revoked .starting, body.-revoked .ended, body.-failed .starting, body.-failed .ended {
  display: none; }
body.-revoked .again { display: none; }
.why p { max-width: 48em; padding: 0 1em; white-space: pre-line; }
a { color: #9cf; }
"""


# textual.js opens the tab's websocket itself and keeps it to itself; wrapping the
# constructor lets the page hear the server's ENDED message on that same socket. The
# text goes in as text, never as HTML.
_LISTEN = """
(() => {
  const Native = window.WebSocket;
  function Watched(url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") return;
      let packet;
      try { packet = JSON.parse(event.data); } catch (error) { return; }
      if (!Array.isArray(packet) || packet[0] !== ENDED || !packet[1]) return;
      document.getElementById("why").textContent = String(packet[1].text || "");
      document.body.classList.add(packet[1].kind === "revoked" ? "-revoked" : "-failed");
    });
    return socket;
  }
  Watched.prototype = Native.prototype;
  for (const state of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) Watched[state] = Native[state];
  window.WebSocket = Watched;
})();
""".replace("ENDED", json.dumps(ENDED))


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
<script>{_LISTEN}</script>
<script src="{escape(static_url)}js/textual.js"></script>
<style>{style}</style>
</head>
<body>
<div class="note starting"><p>Starting the grading app for {escape(annotator)}&hellip;</p></div>
<div class="note ended"><p>This tab's app has ended. Every grade was saved as you gave it.<br>
<a href="">Open it again</a></p></div>
<div class="note why"><div><p id="why"></p>
<p class="again"><a href="">Open it again</a></p></div></div>
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


def refusal_page(status: int, message: str, heading: str | None = None) -> str:
    title = heading or str(status)
    return f"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>raglabel: {escape(title)}</title></head>
<body><h1>{escape(title)}</h1><p>{escape(message)}</p></body>
</html>
"""


def invite_gone(annotator: str, *, replaced: bool) -> str:
    """Why an annotator's invite no longer opens the app, and what to do."""
    if replaced:
        return (
            f"{annotator}'s invite link was replaced by a newer one, so this one no longer "
            "opens the grading app. Every grade already given is saved. Open the newest "
            "link the project's owner sent you, or ask them for a new one."
        )
    return (
        f"{annotator}'s invite was revoked by the project's owner, so it no longer opens "
        "the grading app. Every grade already given is saved. To grade again, ask the "
        "project's owner for a new invite link."
    )


def app_failed(line: str, *, started: bool) -> str:
    """What a tab says when its app could not start, or stopped with an error."""
    said = [f"The grading app {'stopped with an error' if started else 'could not start'}:", line]
    if started:
        said.append("Every grade given before it stopped is saved.")
    said.append("The server's log holds the whole error: tell the project's owner.")
    return "\n".join(said)
