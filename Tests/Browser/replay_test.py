#!/usr/bin/env python3
"""A replay on the studio page in a real browser (issue 29): a rendezvous, a
host that streams its frame-numbered test pattern for about 10 s with
--replay and then closes its room (it stays to serve the replay), and a
viewer that plays the replay by its id through the rendezvous with --web,
all the release binary ($LVBNODE_BIN) as processes. The viewer's page shows
the replay's controls instead of the room's (no chat entry, no likes), its
length, the host's frame numbers advancing from the start; the scrubber
seeks (the picture jumps to the frame drawn at the time asked for) and the
button pauses (the picture and the position stop). A viewer of another
room, still live on the same rendezvous, sees the replay in its page's room
list after the live room; a click plays it on that page (the replay's
controls, its frame numbers) while the node stays in its room, and a click
on the room brings the live back.

    python3 Tests/Browser/replay_test.py          # the tests
    python3 Tests/Browser/replay_test.py --check  # says what is missing, exit 1

Run from the suite by Tests/EndToEndTests/StudioBrowserTests.swift."""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import picture  # noqa: E402
from studio_test import SIZE, missing  # noqa: E402

FPS = 30
world = None


class Replay(node.World):
    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="lvbnode-replay-page-")
        super().__init__()

    def _start(self):
        import studio_browser
        started = time.monotonic()
        rendezvous = node.Node("rendezvous", ["rendezvous", "--ephemeral", "--listen", "127.0.0.1:0", "--json"])
        self.rendezvous = rendezvous.wait_for("ready")["listen"]
        self.host = node.Node("host", ["host", "--home", self.home, "--replay", "--rendezvous", self.rendezvous,
                                       "--listen", "127.0.0.1:0", "--json", "--title", "Ten seconds",
                                       "--size", f"{SIZE[0]}x{SIZE[1]}"])
        self.id = self.host.wait_for("replay")["id"]
        live_from = time.monotonic()
        # Another room, live throughout, and a viewer of it whose page lists rooms.
        live = node.Node("live", ["host", "--ephemeral", "--rendezvous", self.rendezvous, "--listen", "127.0.0.1:0", "--json",
                                  "--title", "Still live", "--size", f"{SIZE[0]}x{SIZE[1]}"])
        self.live_room = live.wait_for("ready")["room"]
        self.watcher = node.Node("watcher", ["join", self.live_room, "--rendezvous", self.rendezvous, "--ephemeral", "--preload", "0",
                                             "--listen", "127.0.0.1:0", "--web", "0", "--json"])
        self.watch_url = self.watcher.wait_for("web")["url"]
        time.sleep(10)
        self.host.send("/close")
        # Ten seconds and what starting the other room took on this machine: the replay is as long.
        self.live_seconds = time.monotonic() - live_from
        self.host.wait_for("serving", 10)
        # The rendezvous lists the replay once the host told it.
        self.viewer = None
        deadline = time.monotonic() + 10
        while self.viewer is None:
            viewer = node.Node("viewer", ["join", self.id, "--rendezvous", self.rendezvous, "--ephemeral",
                                          "--listen", "127.0.0.1:0", "--web", "0", "--json"])
            try:
                self.url = viewer.wait_for("web", 5)["url"]
                self.viewer = viewer
            except AssertionError:
                viewer.stop()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self.browser = studio_browser.Browser()
        self.page = self.browser.open(self.url)
        self.page.wait(lambda p: p.studio("wsState") == "open", 10, "the replay page's WebSocket open")
        print(f"rendezvous, host, replay and page ready in {time.monotonic() - started:.1f} s", file=sys.stderr)

    def close(self):
        try:
            super().close()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def setUpModule():
    global world
    world = Replay()


def tearDownModule():
    if world:
        world.close()


def read_numbers(page, shots=4, interval=0.2):
    return [n for n in picture.frame_numbers(page, SIZE, shots, interval) if n is not None]


def position_ms(page):
    return float(page.script("return document.querySelector('#replay-seek').value"))


class ReplayPageTests(unittest.TestCase):
    def test_1_the_page_plays_the_replay_from_the_start_with_its_controls(self):
        page = world.page
        page.wait(lambda p: p.find("#replay-bar").is_displayed(), 10, "the replay's controls shown (the hello says replay)")
        for hidden in ("#chat-input", "#like-button", "#viewer-list"):
            self.assertFalse(page.find(hidden).is_displayed(), f"{hidden} is a live room's, hidden on a replay's page")
        info = world.viewer.wait_for("replay_info", 10)
        self.assertEqual(page.find("#title").text, "Ten seconds")
        duration = int(info["duration_ms"])
        self.assertTrue(9000 <= duration <= world.live_seconds * 1000 + 1500, f"{duration} ms of a live of {world.live_seconds:.1f} s")
        page.wait(lambda p: float(p.script("return document.querySelector('#replay-seek').max")) == duration, 5,
                  "the scrubber spanning the whole replay")
        length = f"/ {duration // 60000}:{duration // 1000 % 60:02d}"
        page.wait(lambda p: p.find("#replay-time").text.endswith(length), 5, f"the replay's length shown ({length})")
        page.wait(lambda p: p.find("#status").get_attribute("data-status") == "replay", 10, "the REPLAY badge")

        def advancing(p):
            read = read_numbers(p)
            return len(read) >= 3 and read == sorted(set(read)) and read[-1] - read[0] >= 5 and read
        read = page.wait(advancing, 10, "the host's frame numbers advancing on the canvas")
        print(f"from the start: frames {read}, position {position_ms(page):.0f} ms", file=sys.stderr)

    def test_2_the_scrubber_seeks_and_the_button_pauses(self):
        page = world.page
        # The page seeks where the scrubber is let go (a change event).
        page.script("""const s = document.querySelector('#replay-seek');
                       s.value = '6000'; s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change'));""")
        frame = world.viewer.wait_for("replay_frame", 5, lambda e: e.get("at_ms", 0) >= 6000)
        at = frame["at_ms"]
        self.assertTrue(6000 <= at <= 6040, f"{frame}")

        def jumped(p):
            read = read_numbers(p, shots=3, interval=0.1)
            return read and min(read) >= at * FPS // 1000 - 1 and read
        read = page.wait(jumped, 5, "the canvas showing the frames drawn after 6 s")
        self.assertTrue(read[0] <= at * FPS // 1000 + 2 * FPS, f"frames {read} for a seek to {at} ms")
        # Pause: the position and the picture stop.
        page.find("#replay-toggle").click()
        world.viewer.wait_for("replay_state", 5, lambda e: e.get("text", "").startswith("paused"))
        time.sleep(0.6)
        still = read_numbers(page, shots=3, interval=0.3)
        where = position_ms(page)
        time.sleep(1)
        self.assertEqual(len(set(still)), 1, f"paused, the picture still moves: {still}")
        self.assertAlmostEqual(position_ms(page), where, delta=50, msg="paused, the scrubber still moves")
        page.find("#replay-toggle").click()
        world.viewer.wait_for("replay_state", 5, lambda e: e.get("text", "").startswith("playing"))
        page.wait(lambda p: (lambda r: len(r) >= 2 and r[-1] > still[0] and r)(read_numbers(p, shots=3)), 5,
                  "the picture moving again after play")
        print(f"seek to {at} ms: frames {read}; paused at frame {still[0]}", file=sys.stderr)

    def test_3_a_live_viewers_page_plays_the_replay_from_its_room_list_and_goes_back_to_live(self):
        page = world.browser.open(world.watch_url)
        page.wait(lambda p: p.studio("wsState") == "open", 10, "the live viewer's page WebSocket open")
        # The replay's frames are those its host drew in its ~10 s; the live room is long past them.
        last_replay_frame = 12 * FPS

        def items(p):
            return p.script("""return [...document.querySelectorAll('#room-list .room-item')]
                               .map((li) => [li.dataset.id, li.className])""")
        listed = page.wait(lambda p: (lambda i: any(x[0] == world.id for x in i) and i)(items(p)), 15,
                           "the replay in the live viewer's room list")
        ids = [x[0] for x in listed]
        self.assertLess(ids.index(world.live_room), ids.index(world.id), f"live rooms first, then replays: {listed}")
        self.assertIn("replay", dict(listed)[world.id])
        self.assertIn("current", dict(listed)[world.live_room])
        live = page.wait(lambda p: (lambda r: r and min(r) > last_replay_frame and r)(read_numbers(p)), 10,
                         "the live room's frame numbers")

        # A click on the replay: its controls and its pictures, the node still in its room.
        page.find(f'#room-list .room-item[data-id="{world.id}"]').click()
        clicked = time.monotonic()
        world.watcher.wait_for("replay", 10, lambda e: e.get("id") == world.id)
        page.wait(lambda p: p.find("#replay-bar").is_displayed(), 10, "the replay's controls on the live viewer's page")
        self.assertFalse(page.find("#chat-input").is_displayed(), "the live room's chat hidden while the replay plays")
        self.assertEqual(page.find("#title").text, "Ten seconds")

        def replaying(p):
            read = read_numbers(p)
            return len(read) >= 3 and max(read) <= last_replay_frame and read == sorted(set(read)) and read
        replayed = page.wait(replaying, 10, "the replay's frame numbers advancing on the live viewer's page")
        first_replay = time.monotonic() - clicked
        self.assertIn("current", dict(items(page))[world.id])
        started = world.watcher.wait_for("replay_frame", 5)
        self.assertEqual(started["at_ms"], 0)

        # A click on the live room: the live again, at once from its latest keyframe.
        page.find(f'#room-list .room-item[data-id="{world.live_room}"]').click()
        clicked = time.monotonic()
        world.watcher.wait_for("replay_stopped", 5)
        back = page.wait(lambda p: (lambda r: r and min(r) > last_replay_frame and r)(read_numbers(p, shots=2, interval=0.1)), 10,
                         "the live room's frame numbers again")
        back_after = time.monotonic() - clicked
        page.wait(lambda p: not p.find("#replay-bar").is_displayed() and p.find("#chat-input").is_displayed(), 5,
                  "the live room's widgets back")
        self.assertIn("current", dict(items(page))[world.live_room])
        print(f"live frames {live}; the node's first replay picture {started['after_ms']:.0f} ms after it asked, "
              f"replay frames {replayed} read {first_replay:.2f} s after the click; "
              f"live frames {back} {back_after:.2f} s after the click back", file=sys.stderr)


if __name__ == "__main__":
    node.main("replay_test", missing, lambda: world and world.close())
