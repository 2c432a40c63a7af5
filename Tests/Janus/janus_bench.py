#!/usr/bin/env python3
"""Scripts/bench [seconds] janus: a room handed to Janus, against lvbnode's own viewer.

In a network namespace of its own (Janus gathers ICE candidates on no
loopback interface: a veth pair, eth0 10.213.0.1 and eth1 10.213.0.2): Debian's
Janus with docs/janus's mountpoint, a host (640x360, the synthetic pattern
with its capture-time strip, a keyframe every 30 s), and one viewer that
both decodes (--video-out -, read here) and hands the stream to Janus
(--egress). Then, one after another, SUBSCRIBERS WebRTC subscribers
(Tests/Janus/subscriber.py, aiortc) each watch for `seconds` (4 to 10).

  glass-to-glass: the time a picture leaves a decoder less the capture time
    its strip carries, for the viewer (host -> lvbnode viewer, the
    reference) and for the subscribers (host -> viewer -> Janus -> WebRTC
    subscriber), over the same windows; Janus's part is the difference;
  subscribe -> first picture: from the subscriber's start request to its
    first decoded picture (a keyframe the host made for it: with a 30 s GOP
    there is no other).

Goals (issue 31): Janus adds at most 20 ms at p95; first picture at most
300 ms after subscribing. Needs root, janus, aiortc and LVBNODE_BIN; says
which is missing and exits 0 otherwise (a bench, not a test).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

SUBSCRIBERS = 5
JANUS = "/usr/bin/janus"
WIDTH, HEIGHT = 640, 360
GOAL_ADDED_P95, GOAL_FIRST = 20.0, 300.0


def missing():
    if os.geteuid() != 0:
        return "it needs root (a network namespace for Janus)"
    if not os.access(JANUS, os.X_OK):
        return "Janus is not installed (Scripts/setup installs Debian's janus)"
    try:
        import aiortc  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        return "aiortc is not installed (Scripts/setup installs it from PyPI)"
    binary = os.environ.get("LVBNODE_BIN", "")
    if not os.access(binary, os.X_OK):
        return "LVBNODE_BIN does not name the lvbnode binary (Scripts/bench sets it)"
    return None


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p / 100))]


def now_ms():
    return int(time.time() * 1000)


class Lab:
    """The namespace, Janus in it, and the processes started there."""

    def __init__(self):
        self.ns = "lvbjb%d" % os.getpid()
        self.dir = tempfile.mkdtemp(prefix="lvbbench-janus")
        self.procs = []

    def sh(self, script):
        subprocess.run(["/bin/sh", "-ec", script], check=True)

    def __enter__(self):
        n = self.ns
        subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        self.sh(f"""ip netns add {n}; ip -n {n} link set lo up
                   ip -n {n} link add eth0 type veth peer name eth1
                   ip -n {n} addr add 10.213.0.1/24 dev eth0; ip -n {n} addr add 10.213.0.2/24 dev eth1
                   ip -n {n} link set eth0 up; ip -n {n} link set eth1 up""")
        conf = os.path.join(self.dir, "conf")
        os.mkdir(conf)
        for src in ["Tests/Janus/conf/janus.jcfg", "Tests/Janus/conf/janus.transport.http.jcfg",
                    "docs/janus/janus.plugin.streaming.jcfg"]:
            shutil.copy(os.path.join(ROOT, src), conf)
        log = os.path.join(self.dir, "janus.log")
        self.start([JANUS, "-F", conf, "-o", "-N", "-L", log], stdout=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            text = open(log).read() if os.path.exists(log) else ""
            if "HTTP webserver started" in text and "Streaming plugin initialized" in text:
                return self
            time.sleep(0.1)
        raise RuntimeError("Janus did not start")

    def start(self, args, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", self.ns] + args, stdin=subprocess.DEVNULL, **kw)
        self.procs.append(p)
        return p

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["ip", "netns", "del", self.ns], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Y4MReader(threading.Thread):
    """The viewer's decoded pictures (--video-out -): (wall ms, glass-to-glass ms) per readable picture."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.samples = []

    def run(self):
        import numpy as np
        from subscriber import read_barcode, ROWS
        header = self.pipe.readline()
        fields = dict((f[0], f[1:]) for f in header.decode().split()[1:])
        w, h = int(fields["W"]), int(fields["H"])
        size = w * h * 3 // 2
        cx, cspan = (w // 4) & ~1, (w // 2) & ~1
        while True:
            tag = self.pipe.readline()
            if not tag:
                return
            data = self.pipe.read(size)
            if len(data) < size:
                return
            t = now_ms()
            y = np.frombuffer(data, dtype=np.uint8, count=w * h).reshape(h, w)
            c = read_barcode(y, w, h, (h - ROWS) & ~1, cx, cspan)
            if c is not None:
                self.samples.append((t, (t - c) & 0xFFFF))


def json_lines(pipe, sink, ready):
    for raw in pipe:
        try:
            o = json.loads(raw)
        except ValueError:
            continue
        sink.append(o)
        if o.get("event") == "ready":
            ready.set()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    watch = max(4.0, min(10.0, seconds))
    print()
    print(f"Janus egress: lvbnode as processes and Debian's Janus in a network namespace (a host at {WIDTH}x{HEIGHT}, "
          f"GOP 30 s; a viewer decoding and handing the stream to Janus with --egress); {SUBSCRIBERS} WebRTC "
          f"subscribers (aiortc) one after another, {watch:.0f} s each")
    why = missing()
    if why:
        print(f"  skipped: {why}")
        return
    binary = os.environ["LVBNODE_BIN"]
    with Lab() as lab:
        host_lines, host_ready = [], threading.Event()
        host = lab.start([binary, "host", "--ephemeral", "--listen", "10.213.0.2:7400", "--json",
                          "--size", f"{WIDTH}x{HEIGHT}", "--gop", "30"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=json_lines, args=(host.stdout, host_lines, host_ready), daemon=True).start()
        if not host_ready.wait(10):
            raise RuntimeError("the host printed no ready event")
        ticket = next(o["ticket"] for o in host_lines if o.get("event") == "ready")
        viewer_log = open(os.path.join(lab.dir, "viewer.err"), "w")
        viewer = lab.start([binary, "join", ticket, "--ephemeral", "--json", "--egress", "10.213.0.1", "--video-out", "-"],
                           stdout=subprocess.PIPE, stderr=viewer_log)
        reader = Y4MReader(viewer.stdout)
        reader.start()
        time.sleep(3)
        if not reader.samples:
            raise RuntimeError("the viewer decoded no readable picture")

        firsts, subscribed, reference, windows = [], [], [], []
        for k in range(SUBSCRIBERS):
            out = subprocess.run(["ip", "netns", "exec", lab.ns, sys.executable, "-u", "-B", os.path.join(HERE, "subscriber.py"),
                                  "--janus", "http://10.213.0.1:8088/janus", "--seconds", str(watch)],
                                 capture_output=True, text=True, timeout=watch + 30)
            events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
            watching = next((e["t"] for e in events if e["event"] == "watching"), None)
            video = [e for e in events if e["event"] == "video"]
            if watching is None or not video:
                print(f"  subscriber {k + 1}: no pictures ({out.stderr.strip()[-300:]})")
                continue
            firsts.append(video[0]["t"] - watching)
            settled = [e for e in video if e["capture"] is not None and e["t"] >= video[0]["t"] + 1000]
            subscribed += [(e["t"] - e["capture"]) & 0xFFFF for e in settled]
            if settled:
                windows.append((settled[0]["t"], settled[-1]["t"]))
            time.sleep(0.5)
        for start, end in windows:
            reference += [lat for t, lat in reader.samples if start <= t <= end]

    if not firsts or not subscribed or not reference:
        print("  FAILED: too few pictures to measure")
        return
    ref95, sub95 = pct(reference, 95), pct(subscribed, 95)
    added = sub95 - ref95

    def row(label, value, goal="", ok=None):
        mark = "" if ok is None else ("  ✓" if ok else "  ✗")
        print(f"  {label:<52} {value:<24}{('goal ' + goal) if goal else ''}{mark}")

    row("host → lvbnode viewer p50 / p95 (reference)", f"{pct(reference, 50):.1f} / {ref95:.1f} ms")
    row("host → viewer → Janus → WebRTC subscriber p50 / p95", f"{pct(subscribed, 50):.1f} / {sub95:.1f} ms")
    row("Janus adds at p95", f"{added:.1f} ms", f"≤ {GOAL_ADDED_P95:.0f} ms", added <= GOAL_ADDED_P95)
    row("subscribe → first picture p50 / max", f"{pct(firsts, 50):.0f} / {max(firsts):.0f} ms",
        f"≤ {GOAL_FIRST:.0f} ms", max(firsts) <= GOAL_FIRST)
    print(f"    {len(subscribed)} subscriber pictures, {len(reference)} viewer pictures in the same windows; "
          f"first pictures {', '.join(str(f) for f in firsts)} ms")


if __name__ == "__main__":
    main()
