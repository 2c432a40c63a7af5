#!/usr/bin/env python3
"""Room browsing on the studio page in a real browser (issue 12): a
rendezvous, two hosts with different titles announcing to it (each with its
thumbnail), and a viewer that joined one room by its id through the
rendezvous with --web, all the release binary ($LVBNODE_BIN) as processes.
The viewer's page lists both rooms with their thumbnails; ArrowDown switches
to the other room (the node reports the switch, the title changes, the
picture moves again), ArrowUp comes back.

    python3 Tests/Browser/rooms_test.py          # the tests
    python3 Tests/Browser/rooms_test.py --check  # says what is missing, exit 1

Run from the suite by Tests/EndToEndTests/StudioBrowserTests.swift."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import picture  # noqa: E402
from studio_test import SIZE, missing  # noqa: E402

world = None


class Rooms(node.World):
    def _start(self):
        import studio_browser
        started = time.monotonic()
        rendezvous = node.Node("rendezvous", ["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        self.rendezvous = rendezvous.wait_for("ready")["listen"]
        self.hosts = {}
        for title, nick in (("Morning show", "anna"), ("Night radio", "ben")):
            host = node.Node(nick, ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--rendezvous", self.rendezvous,
                                    "--title", title, "--nick", nick, "--size", f"{SIZE[0]}x{SIZE[1]}"])
            self.hosts[title] = host.wait_for("ready")["room"]
        first = self.hosts["Morning show"]
        self.viewer = node.Node("viewer", ["join", first, "--rendezvous", self.rendezvous, "--ephemeral",
                                           "--listen", "127.0.0.1:0", "--web", "0", "--json", "--nick", "watcher"])
        self.browser = studio_browser.Browser()
        self.page = self.browser.open(self.viewer.wait_for("web")["url"])
        self.viewer.wait_for("admitted", 15)
        self.page.wait(lambda p: p.studio("wsState") == "open", 10, "the viewer's page WebSocket open")
        print(f"rendezvous, hosts and page ready in {time.monotonic() - started:.1f} s", file=sys.stderr)


def setUpModule():
    global world
    world = Rooms()


def tearDownModule():
    if world:
        world.close()


def listed(page):
    """(id, title, thumbnail loaded) of each room in the page's #room-list."""
    return [tuple(r) for r in page.script("""
        return [...document.querySelectorAll('#room-list .room-item')].map(li => {
            const img = li.querySelector('img.room-thumb');
            return [li.dataset.id, li.querySelector('.room-title').textContent,
                    !!img && img.complete && img.naturalWidth > 0];
        });""")]


class RoomBrowsingTests(unittest.TestCase):
    def frame_numbers(self, page, shots=6, interval=0.25):
        return picture.frame_numbers(page, SIZE, shots, interval)

    def assert_picture_moves(self, page, painted_before, what):
        page.wait(lambda p: (p.studio("videoFramesPainted") or 0) > painted_before + 10, 4,
                  f"the canvas painting again {what}")

        def advancing(p):
            read = [n for n in self.frame_numbers(p, shots=4, interval=0.2) if n is not None]
            return len(read) >= 3 and read == sorted(set(read)) and read[-1] - read[0] >= 5 and read
        return page.wait(advancing, 8, f"the host's frame numbers advancing on the canvas {what}")

    def switch(self, key, title, room):
        from selenium.webdriver.common.action_chains import ActionChains
        page = world.page
        painted = page.studio("videoFramesPainted") or 0
        switches = len([e for e in world.viewer.events if e.get("event") == "switched"])
        started = time.monotonic()
        ActionChains(page._focus()).send_keys(key).perform()
        switched = world.viewer.wait_for("switched", 5, lambda e: e.get("to") == room
                                         and len([x for x in world.viewer.events if x.get("event") == "switched"]) > switches)
        page.wait(lambda p: p.find("#title").text == title, 5, f"the page's #title showing {title!r}")
        read = self.assert_picture_moves(page, painted, f"after switching to {title!r}")
        print(f"{title}: switched (preloaded {switched.get('preloaded')}), picture moving {time.monotonic() - started:.1f} s "
              f"after the key: {read}", file=sys.stderr)
        # Exactly one switch for one key press.
        time.sleep(1)
        self.assertEqual(len([e for e in world.viewer.events if e.get("event") == "switched"]), switches + 1,
                         "one key press, one switch")

    def test_1_the_page_lists_both_rooms_with_their_thumbnails(self):
        page = world.page
        page.wait(lambda p: p.find("#rooms").is_displayed(), 10, "the #rooms panel shown (the hello says rendezvous)")
        want = {room: title for title, room in world.hosts.items()}
        rooms = page.wait(lambda p: (lambda r: len(r) == 2 and all(t for _, _, t in r) and r)(listed(p)), 20,
                          "both rooms in #room-list with their thumbnails loaded")
        self.assertEqual({room: title for room, title, _ in rooms}, want, f"{rooms}")
        current = page.script("return document.querySelector('#room-list .current')?.dataset.id")
        self.assertEqual(current, world.hosts["Morning show"], "the room the viewer is in is marked .current")
        size = page.script("return [document.querySelector('#room-list img.room-thumb').naturalWidth,"
                           " document.querySelector('#room-list img.room-thumb').naturalHeight]")
        self.assertEqual(size, [160, 90], "thumbnails are 160 wide keeping the picture's 16:9")
        self.assertEqual(page.find("#title").text, "Morning show")
        self.assert_picture_moves(page, 0, "before any switch")

    def test_2_arrow_down_switches_to_the_other_room_and_arrow_up_back(self):
        from selenium.webdriver.common.keys import Keys
        self.switch(Keys.ARROW_DOWN, "Night radio", world.hosts["Night radio"])
        world.page.wait(lambda p: p.script("return document.querySelector('#room-list .current')?.dataset.id")
                        == world.hosts["Night radio"], 10, "the other room marked .current")
        self.switch(Keys.ARROW_UP, "Morning show", world.hosts["Morning show"])


if __name__ == "__main__":
    node.main("rooms_test", missing, lambda: world and world.close())
