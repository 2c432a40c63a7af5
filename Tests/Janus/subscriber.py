#!/usr/bin/env python3
"""A WebRTC subscriber to a Janus streaming mountpoint, as a browser would be.

It talks to Janus's HTTP API (create a session, attach the streaming plugin,
"watch" the mountpoint, answer Janus's offer with aiortc, "start"), decodes
the VP8 and Opus it gets, and prints one JSON object per line:

  {"event": "watching", "t": MS}                 the start request went out
  {"event": "video", "t": MS, "frame": N, "capture": C, "width": W, "height": H}
  {"event": "audio", "t": MS, "frames": N, "rms": R}   once a second
  {"event": "done", "video": N, "audio": N}

t is the wall clock in milliseconds when the picture or sound came out of
the decoder. frame and capture are what lvbnode's synthetic test pattern
draws in its barcodes (the frame number at the top, the capture time in ms
modulo 65536 at the bottom, both null when unreadable), so a test reads the
host's frame numbers and the glass-to-glass delay from them.

Usage: subscriber.py --janus http://IP:8088/janus --mountpoint ID --seconds S
"""
import argparse
import asyncio
import json
import math
import random
import sys
import time
import urllib.request

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc import jitterbuffer
from aiortc.jitterbuffer import JitterFrame

# aiortc hands a video frame to the decoder only once the next frame's first
# packet arrives (a frame interval late: 33 ms at 30 fps). A browser's
# jitter buffer releases a frame as soon as it is complete. So that this
# subscriber measures the server and not aiortc, its jitter buffer also
# releases a frame at its last packet (the RTP marker bit, RFC 7741 §4.1)
# once every packet from the frame's first is there.
_remove_frame = jitterbuffer.JitterBuffer._remove_frame


def _remove_complete_frame(self, sequence_number):
    if self._is_video:
        packets, timestamp = [], None
        for count in range(self.capacity):
            packet = self._packets[(self._origin + count) % self._capacity]
            if packet is None or (timestamp is not None and packet.timestamp != timestamp):
                break
            timestamp = packet.timestamp
            packets.append(packet)
            if packet.marker:
                self.remove(count + 1)
                return JitterFrame(data=b"".join([x._data for x in packets]), timestamp=timestamp)
    return _remove_frame(self, sequence_number)


jitterbuffer.JitterBuffer._remove_frame = _remove_complete_frame

# lvbnode's SyntheticVideo barcode: 20 cells (start 1,0; 16 data bits MSB
# first; even parity; stop 0), 16 rows high.
CELLS, ROWS, DATA = 20, 16, 16


def barcode_bits(value):
    data = [(value >> (DATA - 1 - i)) & 1 == 1 for i in range(DATA)]
    return [True, False] + data + [sum(data) % 2 == 1, False]


def read_barcode(y, width, height, top, x0, span):
    cell = span // CELLS
    if cell < 2 or height < top + ROWS:
        return None
    bits = []
    for i in range(CELLS):
        a, b = x0 + i * cell + cell // 4, x0 + i * cell + cell - cell // 4
        block = y[top + ROWS // 4: top + ROWS * 3 // 4, a:max(a + 1, b)]
        mean = int(block.mean())
        if mean > 170:
            bits.append(True)
        elif mean < 80:
            bits.append(False)
        else:
            return None
    value = 0
    for bit in bits[2:2 + DATA]:
        value = value << 1 | (1 if bit else 0)
    return value if bits == barcode_bits(value) else None


def now_ms():
    return int(time.time() * 1000)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Janus:
    """Janus's plain HTTP API (long polls for events)."""

    def __init__(self, url):
        self.url = url.rstrip("/")

    def _post(self, path, body):
        body = dict(body, transaction="%016x" % random.getrandbits(64))
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            reply = json.loads(r.read())
        if reply.get("janus") == "error":
            raise RuntimeError("janus: %s" % reply.get("error"))
        return reply

    def _get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=40) as r:
            return json.loads(r.read())

    async def post(self, path, body):
        return await asyncio.to_thread(self._post, path, body)

    async def event(self, session, want):
        """The next plugin event that `want` accepts (long-polling the session)."""
        while True:
            reply = await asyncio.to_thread(self._get, "/%d?maxev=1" % session)
            for ev in reply if isinstance(reply, list) else [reply]:
                if ev.get("janus") == "event" and want(ev):
                    return ev


async def run(args):
    janus = Janus(args.janus)
    session = (await janus.post("", {"janus": "create"}))["data"]["id"]
    handle = (await janus.post("/%d" % session, {"janus": "attach", "plugin": "janus.plugin.streaming"}))["data"]["id"]
    path = "/%d/%d" % (session, handle)
    await janus.post(path, {"janus": "message", "body": {"request": "watch", "id": args.mountpoint}})
    offer = await janus.event(session, lambda ev: "jsep" in ev)
    plugin = offer.get("plugindata", {}).get("data", {})
    if plugin.get("error"):
        raise RuntimeError("janus: %s" % plugin["error"])

    pc = RTCPeerConnection()
    counts = {"video": 0, "audio": 0}
    done = asyncio.Event()

    async def video(track):
        while not done.is_set():
            try:
                frame = await track.recv()
            except Exception:
                return
            t = now_ms()
            plane = frame.to_ndarray(format="yuv420p")
            h, w = frame.height, frame.width
            y = plane[:h]
            counts["video"] += 1
            cx, cspan = (w // 4) & ~1, (w // 2) & ~1
            emit({"event": "video", "t": t, "frame": read_barcode(y, w, h, 0, 0, w),
                  "capture": read_barcode(y, w, h, (h - ROWS) & ~1, cx, cspan) if h >= 3 * ROWS else None,
                  "width": w, "height": h})

    async def audio(track):
        frames, energy, last = 0, 0.0, time.monotonic()
        while not done.is_set():
            try:
                frame = await track.recv()
            except Exception:
                return
            samples = frame.to_ndarray().astype("float64").ravel()
            counts["audio"] += 1
            frames += 1
            energy += float((samples * samples).mean()) if samples.size else 0.0
            if time.monotonic() - last >= 1:
                emit({"event": "audio", "t": now_ms(), "frames": frames, "rms": round(math.sqrt(energy / frames), 1)})
                frames, energy, last = 0, 0.0, time.monotonic()

    tasks = []

    @pc.on("track")
    def on_track(track):
        tasks.append(asyncio.ensure_future(video(track) if track.kind == "video" else audio(track)))

    await pc.setRemoteDescription(RTCSessionDescription(sdp=offer["jsep"]["sdp"], type=offer["jsep"]["type"]))
    await pc.setLocalDescription(await pc.createAnswer())
    await janus.post(path, {"janus": "message", "body": {"request": "start"},
                            "jsep": {"type": pc.localDescription.type, "sdp": pc.localDescription.sdp}})
    emit({"event": "watching", "t": now_ms()})

    async def keepalive():
        while not done.is_set():
            await asyncio.sleep(20)
            await janus.post("/%d" % session, {"janus": "keepalive"})

    tasks.append(asyncio.ensure_future(keepalive()))
    await asyncio.sleep(args.seconds)
    done.set()
    await pc.close()
    for task in tasks:
        task.cancel()
    try:
        await janus.post(path, {"janus": "detach"})
        await janus.post("/%d" % session, {"janus": "destroy"})
    except Exception:
        pass
    emit({"event": "done", "video": counts["video"], "audio": counts["audio"]})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--janus", required=True, help="Janus's HTTP API, e.g. http://10.77.0.1:8088/janus")
    p.add_argument("--mountpoint", type=int, default=7400)
    p.add_argument("--seconds", type=float, default=10)
    args = p.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
