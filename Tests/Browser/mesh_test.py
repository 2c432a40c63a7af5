#!/usr/bin/env python3
"""The demo mesh's page (lvbnode mesh --web) in a real browser: the mesh
runs as the release binary ($LVBNODE_BIN), headless Chromium opens the page
it prints, and the page must draw every node of the tree with its edges,
list the mesh's events, link to the first viewer's studio page (which must
show the host's picture), and show the summary once the mesh ends.

    python3 Tests/Browser/mesh_test.py

Run from the suite by Tests/EndToEndTests/StudioBrowserTests.swift."""

import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import studio_test  # noqa: E402

VIEWERS = 3


class MeshPageTests(unittest.TestCase):
    def setUp(self):
        import studio_browser
        self.browser = None
        self.mesh = node.Node("mesh", ["mesh", "--viewers", str(VIEWERS), "--guests", "1", "--duration", "24",
                                       "--web", "0", "--json"])
        self.browser = studio_browser.Browser()

    def tearDown(self):
        try:
            if self.browser:
                self.browser.quit()
        finally:
            node.stop_all()

    def test_the_mesh_page_draws_the_tree_and_links_a_viewers_studio(self):
        try:
            self.check_the_page()
        except AssertionError as failure:
            # What the mesh itself said: its events and its exit, beside the page's state.
            lines = [e.get("text", e.get("event")) for e in self.mesh.events if e.get("event") in ("mesh_event", "mesh_exited")]
            raise AssertionError(f"{failure}\nmesh (exit {self.mesh.process.poll()}): {lines[-30:]}\n"
                                 f"mesh stderr: {self.mesh.stderr_lines[-10:]}") from None

    def check_the_page(self):
        url = self.mesh.wait_for("mesh_web", 15)["url"]
        page = self.browser.open(url)
        # host + viewers + guest, each a circle, and an edge from each node to its parent
        # (before the relay killed at 12 s: by then every node has found its place).
        everyone = VIEWERS + 2
        drawn = page.wait(lambda p: (d := p.script("""return [document.querySelectorAll('svg.tree g circle').length,
                                                              document.querySelectorAll('svg.tree line').length];""")) == [everyone, everyone - 1] and d,
                          12, f"{everyone} nodes drawn in the mesh page's tree, each below its parent")
        self.assertEqual(drawn, [everyone, everyone - 1])
        labels = page.texts("svg.tree g text:not(.figures)")
        for name in ["host-1", "viewer-1", "viewer-2", "viewer-3", "guest-1"]:
            self.assertTrue(any(t.startswith(name) for t in labels), f"{name} among the tree's labels {labels}")
        page.wait(lambda p: any("joined" in t for t in p.texts("#events li")), 10, "join events listed")
        link = page.wait(lambda p: (a := p.find("#studio-link")).is_displayed() and a, 10, "the link to viewer-1's studio page")
        studio_url = link.get_attribute("href")
        self.assertEqual(studio_url, self.mesh.wait_for("mesh_links", 5)["studio"])
        studio = self.browser.open(studio_url)
        studio.wait(lambda p: (p.studio("videoFramesPainted") or 0) > 10, 15, "viewer-1's studio page painting the host's picture")
        page.wait(lambda p: any("killed relay" in t for t in p.texts("#events li")), 20, "the kill of a relay among the events")
        page.wait(lambda p: p.find("#summary").is_displayed(), 30, "the summary once the mesh ends")
        self.assertIn("repair", page.find("#summary-text").text)
        self.assertEqual(self.mesh.process.wait(timeout=15), 0)


if __name__ == "__main__":
    reason = studio_test.missing()
    if reason:
        print(f"mesh_test: {reason} (Scripts/setup installs what is missing)", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
