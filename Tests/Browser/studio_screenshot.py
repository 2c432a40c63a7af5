#!/usr/bin/env python3
"""Makes docs/studio.png, the README's picture of the studio page: a host
and a viewer as the release binary ($LVBNODE_BIN), a guest on stage, chat,
bullet comments and likes, and the viewer's page in headless Chromium.

    python3 Tests/Browser/studio_screenshot.py [OUT.png]"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import studio_browser  # noqa: E402


def main(out):
    browser = None
    try:
        host = node.Node.host("--nick", "anchor", "--title", "Evening jam session")
        ticket = host.wait_for("ready")["ticket"]
        viewer = node.Node.join("mia", ticket, "--nick", "mia")
        guest = node.Node.join("leo", ticket, "--nick", "leo")
        for n in (viewer, guest):
            n.wait_for("admitted")
        guest.send("/linkmic can I join?")
        host.wait_for("linkmic_request", 10)
        host.send("/accept leo")
        host.wait_for("linkmic_started", 10)
        browser = studio_browser.Browser()
        browser.driver.set_window_size(1280, 760)
        page = browser.open(viewer.wait_for("web")["url"])
        page.wait(lambda p: (p.studio("videoFramesPainted") or 0) > 30, 15, "the picture painting")
        lines = [(host, "welcome everyone!"), (guest, "hi from the stage"), (viewer, "great sound tonight"),
                 (host, "next song is a request")]
        for who, text in lines:
            who.send(text)
            time.sleep(0.3)
        viewer.send("/like 12")
        guest.send("/like 5")
        time.sleep(1)
        # Bullet comments last: they cross the picture in a few seconds.
        for who, colour, text in [(viewer, "#FFD84A", "encore!"), (guest, "#5AD7FF", "so smooth"), (host, "#FF5A5A", "thank you")]:
            who.send(f"/danmaku {colour} {text}")
            time.sleep(0.25)
        time.sleep(2.2)
        browser.driver.save_screenshot(out)
        print(f"wrote {out}")
    finally:
        if browser:
            browser.quit()
        node.stop_all()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(node.ROOT, "docs", "studio.png"))
