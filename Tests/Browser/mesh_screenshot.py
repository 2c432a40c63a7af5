#!/usr/bin/env python3
"""Makes docs/mesh-dashboard.png, the README's picture of `lvbnode mesh`:
runs the mesh ($LVBNODE_BIN) on a pseudo-terminal of 112x46, keeps the
dashboard's last picture before the summary, and has headless Chromium
draw it as a terminal would (a <pre> in a monospace font).

    python3 Tests/Browser/mesh_screenshot.py [OUT.png]"""

import html
import os
import pty
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import studio_browser  # noqa: E402

COLUMNS, ROWS = 112, 46


def run_mesh():
    """The mesh's whole output on a terminal of COLUMNS x ROWS."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["COLUMNS"], os.environ["LINES"] = str(COLUMNS), str(ROWS)
        subprocess.run(["stty", "cols", str(COLUMNS), "rows", str(ROWS)])
        os.execv(node.binary(), [node.binary(), "mesh", "--viewers", "8", "--guests", "1", "--duration", "24"])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode("utf-8", "replace")


def last_picture(text):
    """The last full redraw (after the last cursor-home), escapes removed."""
    frame = text.split("\x1b[H")[-1]
    frame = frame.split("\nsummary")[0]
    frame = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", frame).replace("\r", "")
    return "\n".join(line.rstrip() for line in frame.split("\n")).rstrip()


def main(out):
    picture = last_picture(run_mesh())
    page = f"""<!doctype html><meta charset="utf-8"><style>
body {{ margin: 0; background: #14141a; }}
pre {{ margin: 0; padding: 14px 18px; color: #e6e6ea; font: 13px/1.35 'DejaVu Sans Mono', monospace; }}
</style><pre>{html.escape(picture)}</pre>"""
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(page)
    browser = studio_browser.Browser()
    try:
        browser.driver.set_window_size(1000, 160 + 18 * (picture.count("\n") + 2))
        browser.driver.get("file://" + f.name)
        browser.driver.save_screenshot(out)
    finally:
        browser.quit()
        os.unlink(f.name)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(node.ROOT, "docs", "mesh-dashboard.png"))
