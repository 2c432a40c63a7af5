#!/usr/bin/env python3
"""The browser's own camera and microphone on stage (issue 12): Chromium's
fake devices play a picture and a sound this test writes (a bright frame with
a moving dark square, a 440 Hz tone); alice, started WITHOUT stage sources
(--video none --audio none), goes on stage from her page, the host's page
accepts, and alice's page encodes the camera with WebCodecs and sends it to
her node, which publishes it to the host unchanged. Bob's page must show the
camera's bright picture in the pip tile while the host's frame numbers keep
advancing, the host must receive alice's sound, and after the hang-up the
tile goes back to the host's dark bars and alice's page lets the camera go.
Then the host's own page goes live with the camera in place of the host's
test pattern ("Go live with my camera"): bob sees the camera instead of the
pattern, and the pattern again once the host's page stops it.

    python3 Tests/Browser/studio_camera_test.py          # the tests
    python3 Tests/Browser/studio_camera_test.py --check  # says what is missing, exit 1

Run from the suite by Tests/EndToEndTests/StudioBrowserTests.swift."""

import math
import os
import struct
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
import picture  # noqa: E402
from studio_test import SIZE, missing  # noqa: E402

# The fake camera: 320x180 at 30 frames/s, one second looped.
CAMERA = (320, 180)
CAMERA_LUMA = 210

room = None


def write_camera(path):
    """A bright grey picture (luma 210) with a dark 40x40 square moving
    across it, so every frame differs (Y4M 4:2:0, Chromium loops the file)."""
    w, h = CAMERA
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F30:1 Ip A1:1 C420\n".encode())
        for n in range(30):
            y = bytearray([CAMERA_LUMA]) * (w * h)
            x0, y0 = (n * 8) % (w - 40), 20
            for row in range(y0, y0 + 40):
                y[row * w + x0: row * w + x0 + 40] = bytes(40)
            f.write(b"FRAME\n" + bytes(y) + bytes([128]) * (w * h // 2))


def write_microphone(path):
    """One second of a 440 Hz tone, 48 kHz mono 16-bit WAV."""
    rate, n = 48000, 48000
    samples = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(n))
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16))
        f.write(b"data" + struct.pack("<I", len(samples)) + samples)


class Room(node.World):
    """A host, alice (no stage sources: her page's camera is her stage) and
    bob, each with its page open in one browser whose camera and microphone
    are the files above."""

    def __init__(self):
        self.files = tempfile.TemporaryDirectory(prefix="lvbnode-camera-")
        super().__init__()

    def _start(self):
        import studio_browser
        started = time.monotonic()
        camera = os.path.join(self.files.name, "camera.y4m")
        microphone = os.path.join(self.files.name, "microphone.wav")
        write_camera(camera)
        write_microphone(microphone)
        self.host = node.Node.host("--nick", "anchor", "--title", "Camera room", "--size", f"{SIZE[0]}x{SIZE[1]}")
        ticket = self.host.wait_for("ready")["ticket"]
        self.alice = node.Node.join("alice", ticket, "--nick", "alice", "--video", "none", "--audio", "none")
        self.bob = node.Node.join("bob", ticket, "--nick", "bob")
        self.browser = studio_browser.Browser([f"--use-file-for-fake-video-capture={camera}",
                                               f"--use-file-for-fake-audio-capture={microphone}"])
        self.pages = {}
        for n in (self.host, self.alice, self.bob):
            self.pages[n.name] = self.browser.open(n.wait_for("web")["url"])
        for n in (self.alice, self.bob):
            n.wait_for("admitted")
        for name, page in self.pages.items():
            page.wait(lambda p: p.studio("wsState") == "open", 10, f"{name}'s page WebSocket open")
        print(f"room and pages ready in {time.monotonic() - started:.1f} s", file=sys.stderr)

    def close(self):
        try:
            super().close()
        finally:
            self.files.cleanup()


def setUpModule():
    global room
    room = Room()


def tearDownModule():
    if room:
        room.close()


class StudioCameraTests(unittest.TestCase):
    def frame_numbers(self, page, shots=4, interval=0.25):
        return picture.frame_numbers(page, SIZE, shots, interval)

    def tile_lumas(self, page, shots=2, interval=0.1):
        return picture.tile_lumas(page, SIZE, shots, interval)

    def guest_audio(self):
        """The host's count of audio packets received from co-hosts, from its newest stats line."""
        for event in reversed(list(room.host.events)):
            if event.get("event") == "stats" and "media" in event:
                return event["media"].get("guest_audio_packets", 0)
        return 0

    def test_the_pages_camera_goes_on_stage_and_comes_off(self):
        host, alice, bob = room.pages["host"], room.pages["alice"], room.pages["bob"]
        bob.wait(lambda p: (p.studio("videoFramesPainted") or 0) > 10, 10, "bob's page painting video")
        before = self.tile_lumas(bob, shots=3, interval=0.2)
        self.assertLess(sorted(before)[1], 60, f"the pip corner shows the host's dark bars before: {before}")
        self.assertEqual(alice.studio("camera"), "off")

        alice.find("#linkmic-request").click()
        guest = room.host.wait_for("linkmic_request", 10, lambda e: e.get("nick") == "alice")["id"]

        def queued(p):
            for item in p.find_all("#linkmic-queue .linkmic-req"):
                data = item.get_attribute("data-id") or ""
                if data and (guest == data or guest.startswith(data) or data.startswith(guest)):
                    return item
            return None
        host.wait(queued, 10, "alice's request in the host page's #linkmic-queue").find_element("css selector", ".accept").click()
        for n in (room.host, room.alice, room.bob):
            n.wait_for("linkmic_started", 10, lambda e: e.get("id") == guest)

        # Alice's node has no stage sources (hello says so): her page puts its camera on stage by itself.
        room.alice.wait_for("page_camera", 15, lambda e: e.get("on") is True)
        alice.wait(lambda p: p.studio("camera") == "on" and (p.studio("cameraFrames") or 0) > 10, 15,
                   "alice's page encoding and sending her camera")
        self.assertTrue(alice.find("#camera-toggle").is_displayed(), "the camera button shown on stage")
        self.assertEqual(alice.find("#camera-toggle").text, "Stop my camera")

        def camera_in_tile(p):
            lumas = self.tile_lumas(p)
            return min(lumas) > 150 and lumas
        lumas = bob.wait(camera_in_tile, 20, "alice's bright camera picture in the pip tile of bob's canvas")
        numbers = self.frame_numbers(bob)
        read = [n for n in numbers if n is not None]
        self.assertGreaterEqual(len(read), 2, f"the host's numbering in the mix: {numbers} (tile {lumas})")
        self.assertEqual(read, sorted(set(read)), f"frame numbers must advance in the mix: {numbers}")

        # The host hears her: its count of co-host audio packets grows by about 50 a second.
        first = self.guest_audio()
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and self.guest_audio() - first < 100:
            time.sleep(0.5)
        heard = self.guest_audio() - first
        self.assertGreaterEqual(heard, 100, f"co-host audio packets at the host grew by {heard} in 8 s")
        sent_audio = alice.studio("cameraAudioPackets") or 0
        self.assertGreater(sent_audio, 100, f"Opus packets alice's page sent: {sent_audio}")
        stats = room.alice.wait_for("stats", 5, lambda e: (e.get("media") or {}).get("page_frames", 0) > 30)
        self.assertTrue(stats["media"]["on_stage"], stats)

        alice.find("#linkmic-hangup").click()
        room.host.wait_for("linkmic_ended", 10, lambda e: e.get("id") == guest)
        alice.wait(lambda p: p.studio("camera") == "off", 5, "alice's page let the camera go after the hang-up")
        room.alice.wait_for("page_camera", 5, lambda e: e.get("on") is False)
        bob.wait(lambda p: max(self.tile_lumas(p)) < 60, 15, "the host's dark bars back in bob's pip corner after the hang-up")
        self.assertFalse(alice.find("#camera-toggle").is_displayed(), "the camera button hidden off stage")

    def test_then_the_hosts_page_goes_live_with_its_camera_and_back(self):
        host, bob = room.pages["host"], room.pages["bob"]
        self.assertTrue(host.find("#host-camera").is_displayed(), "the host's camera button")
        self.assertEqual(host.find("#host-camera").text, "Go live with my camera")
        before = [n for n in self.frame_numbers(bob) if n is not None]
        self.assertGreaterEqual(len(before), 2, f"the host's test pattern on bob's page first: {before}")

        host.find("#host-camera").click()
        clicked = time.monotonic()
        room.host.wait_for("page_camera", 15, lambda e: e.get("on") is True and e.get("host") is True)
        host.wait(lambda p: p.studio("camera") == "on" and (p.studio("cameraFrames") or 0) > 10, 15,
                  "the host's page encoding and sending its camera")
        self.assertEqual(host.find("#host-camera").text, "Stop my camera")

        # Bob sees the camera in place of the test pattern: bright where its dark bars were, no frame numbers.
        def camera_shown(p):
            lumas = self.tile_lumas(p, shots=3, interval=0.15)
            numbers = self.frame_numbers(p, shots=2, interval=0.1)
            return max(lumas) > 150 and all(n is None for n in numbers) and lumas
        lumas = bob.wait(camera_shown, 20, "the host's page camera in bob's picture")
        shown_after = time.monotonic() - clicked
        # Moving, not how fast (a frame rate on a shared machine is a benchmark's figure): with a keyframe
        # every 2 s, more than 5 pictures in 2 s are delta frames decoded and painted.
        painted = bob.studio("videoFramesPainted")
        time.sleep(2)
        self.assertGreater(bob.studio("videoFramesPainted") - painted, 5, "bob's picture moving on the camera")

        host.find("#host-camera").click()
        room.host.wait_for("page_camera", 10, lambda e: e.get("on") is False)
        host.wait(lambda p: p.studio("camera") == "off", 5, "the host's page let the camera go")

        def pattern_back(p):
            read = [n for n in self.frame_numbers(p, shots=3, interval=0.2) if n is not None]
            return len(read) >= 2 and read == sorted(set(read)) and read[0] > before[-1] and read
        after = bob.wait(pattern_back, 15, "the host's test pattern back on bob's page, its numbers advancing")
        print(f"the host's camera on bob's page {shown_after:.1f} s after the click (tile lumas {lumas}); "
              f"the pattern back at frames {after}", file=sys.stderr)


if __name__ == "__main__":
    node.main("studio_camera_test", missing, lambda: room and room.close())
