#!/usr/bin/env python3
"""Glass-to-glass into the page (issue 12's benchmark): a host streaming its
synthetic picture and tone at 640x360@30 and one viewer serving its studio
page (--web 0), both the release binary ($LVBNODE_BIN) as processes on
loopback UDP; headless Chromium plays the viewer's page.

    python3 Tests/Browser/studio_bench.py [seconds]   # Scripts/bench [seconds] studio

After a 3 s warm-up, a window of max(seconds, 10) s: the page's own
glass-to-glass (window.lvbStudio.g2g: Date.now() at the canvas paint minus
the frame's capture time on the host, same machine, same clock) for every
frame painted in the window, against the viewer node's own figure for the
same stream in the same window (its 2 s stats lines' video_latency_p50_ms /
p95_ms: capture → decoded in the node, the point where the node hands the
frame to the page). CPU over the window from /proc/PID/stat (utime + stime,
% of one core): the viewer node beside Chromium's processes, by role.

Then big gifts: the canvas's frames painted per second while rockets fly
across the picture (ROCKETS sent from the viewer's console, flying one after
another), against the same page's rate just before them, each over
GIFT_WINDOW with the page left alone (a driver call costs its renderer
frames), and their ratio.

A benchmark: it prints its figures and exits 0 even when a step fails."""

import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402

SIZE, FPS = "640x360", 30
WARM_UP = 3.0
MIN_WINDOW = 10.0
# The page keeps the last 300 samples; a poll each second (30 frames) loses none
# and costs the renderer one small script per second.
POLL = 1.0
# Samples of the last poll matched again in the next to find where the new ones start.
TAIL = 8
GOAL_P95 = 50.0
# A big gift's flight across the picture (the page's gifts.js `flight`), the rockets sent at
# once (they fly one after another), and the window counted before them and while they fly.
GIFT_FLIGHT = 2.2
ROCKETS = 3
GIFT_WINDOW = 2 * GIFT_FLIGHT
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def missing():
    """What this machine lacks to run the bench, and what provides it; or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium module is not installed for python3 (Scripts/setup installs it)"
    import studio_browser
    browser = studio_browser.missing()
    if browser:
        return browser + " (Scripts/setup installs it)"
    return None if os.access(node.binary(), os.X_OK) else f"no lvbnode binary at {node.binary()} (Scripts/build makes it)"


def percentile(values, p):
    """Nearest rank, as LVBBench's percentile()."""
    s = sorted(values)
    if not s:
        return None
    rank = math.ceil(p * len(s)) - 1
    return s[min(max(rank, 0), len(s) - 1)]


def median(values):
    return percentile(values, 0.5)


# MARK: - Processes and their CPU time

def _stat(pid):
    """(parent pid, utime + stime in seconds) from /proc/PID/stat, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; fields[0] is field 3 (state)
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def descendants(root):
    """Every process below `root` (chromedriver: the browser, its zygotes and children)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat:
                parents[int(entry)] = stat[0]
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [p for p, parent in parents.items() if parent == pid]
        found += children
        frontier += children
    return found


def chromium_role(pid):
    """'renderer', 'gpu-process', 'utility: network', 'browser', … from Chromium's
    --type and --utility-sub-type switches; None for a process that is not Chromium's."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    # Chromium's children rewrite their command line into one string, spaces between the switches.
    argv = [a for part in argv for a in part.split(" ") if a]
    if not argv or "chrom" not in os.path.basename(argv[0]):
        return None
    switches = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    role = switches.get("type", "browser")
    if role == "utility" and "utility-sub-type" in switches:
        # "network.mojom.NetworkService" → "network"
        role += ": " + switches["utility-sub-type"].split(".")[0]
    return role


def cpu_seconds(pids):
    """utime + stime per pid (processes gone by now left out)."""
    out = {}
    for pid in pids:
        stat = _stat(pid)
        if stat:
            out[pid] = stat[1]
    return out


# MARK: - The run

class Run:
    """The host, the viewer, the browser with the viewer's page, and the window's figures."""

    def __init__(self, seconds):
        self.window = max(float(seconds), MIN_WINDOW)
        self.browser = None
        self.gift_before = self.gift_during = self.gift_flights = self.gift_failed = None

    def start(self):
        import studio_browser
        common = ["--ephemeral", "--listen", "127.0.0.1:0", "--json"]
        self.host = node.Node("host", ["host", *common, "--size", SIZE, "--fps", str(FPS)])
        ticket = self.host.wait_for("ready")["ticket"]
        self.viewer = node.Node("viewer", ["join", ticket, *common, "--web", "0"])
        url = self.viewer.wait_for("web")["url"]
        self.viewer.wait_for("admitted")
        self.browser = studio_browser.Browser()
        self.version = self.browser.driver.capabilities.get("browserVersion", "?")
        self.page = self.browser.open(url)
        self.page.wait(lambda p: (p.studio("videoFramesPainted") or 0) > 0, 15, "the page painting video")

    def poll(self):
        return self.page.script("""
            const s = window.lvbStudio;
            return {painted: s.videoFramesPainted, decoded: s.videoFramesDecoded,
                    audio: s.audioFramesDecoded, g2g: s.g2g.slice()};""")

    def measure(self):
        time.sleep(WARM_UP)
        chromium = {pid: role for pid in descendants(self.browser.driver.service.process.pid)
                    if (role := chromium_role(pid))}
        pids = [self.viewer.process.pid, self.host.process.pid, *chromium]
        events_from = len(self.viewer.events)
        first = self.poll()
        cpu0, t0 = cpu_seconds(pids), time.monotonic()
        tail, samples, self.overrun = first["g2g"][-TAIL:], [], False
        last = first
        while time.monotonic() - t0 < self.window:
            time.sleep(min(POLL, max(0.0, self.window - (time.monotonic() - t0))))
            last = self.poll()
            fresh = new_samples(tail, last["g2g"])
            if fresh is None:
                self.overrun, fresh = True, last["g2g"]
            samples += fresh
            tail = last["g2g"][-TAIL:]
        cpu1, t1 = cpu_seconds(pids), time.monotonic()
        seconds = t1 - t0

        def percent(pid):
            return (cpu1[pid] - cpu0[pid]) / seconds * 100 if pid in cpu0 and pid in cpu1 else None

        self.seconds = seconds
        self.samples = samples
        self.painted_frames = last["painted"] - first["painted"]
        self.painted = self.painted_frames / seconds
        self.decoded = (last["decoded"] - first["decoded"]) / seconds
        self.audio = (last["audio"] - first["audio"]) / seconds
        self.viewer_cpu = percent(self.viewer.process.pid)
        self.host_cpu = percent(self.host.process.pid)
        self.chromium = [(role, pid, percent(pid)) for pid, role in chromium.items() if percent(pid) is not None]
        stats = [e.get("media") or {} for e in self.viewer.events[events_from:] if e.get("event") == "stats"]
        self.node_p50 = median([m["video_latency_p50_ms"] for m in stats if "video_latency_p50_ms" in m])
        self.node_p95 = median([m["video_latency_p95_ms"] for m in stats if "video_latency_p95_ms" in m])
        self.node_intervals = sum(1 for m in stats if "video_latency_p95_ms" in m)
        self.node_fps = median([m["fps"] for m in stats if "fps" in m])

    def painted_over(self, seconds):
        """Frames the canvas painted per second over `seconds`, the page left alone meanwhile."""
        painted, started = self.page.studio("videoFramesPainted"), time.monotonic()
        time.sleep(seconds)
        return (self.page.studio("videoFramesPainted") - painted) / (time.monotonic() - started)

    def measure_gifts(self):
        """The canvas's rate just before and while rockets fly (the first takes
        off as the page gets its gift; the window ends before the last lands)."""
        self.gift_before = self.painted_over(GIFT_WINDOW)
        flights = self.page.studio("giftFlights")
        for _ in range(ROCKETS):
            self.viewer.send("/gift rocket")
        self.viewer.wait_for("gift", 10, lambda e: e.get("gift") == "rocket" and e.get("combo_count") == ROCKETS)
        self.page.wait(lambda p: p.studio("giftFlights") > flights, 10, "a rocket flying across the page")
        self.gift_during = self.painted_over(GIFT_WINDOW)
        self.gift_flights = self.page.studio("giftFlights") - flights

    def close(self):
        browser, self.browser = self.browser, None
        node.shut(browser)


def new_samples(tail, current):
    """The samples of `current` after the previous poll's last ones (`tail`),
    or None when they are no longer there (more than the page keeps came)."""
    if not tail:
        return current
    k = len(tail)
    for end in range(len(current), k - 1, -1):
        if current[end - k:end] == tail:
            return current[end:]
    return None


# MARK: - Printing

def say(line=""):
    print(line, flush=True)


def row(label, value, goal=None, ok=False, note=None):
    """An aligned figure line, as LVBBench's MediaBench.row."""
    line = "  " + label.ljust(33) + " " + value
    if goal is not None:
        line = line.ljust(2 + 34 + 26 - 1) + " " + ("goal " + goal).ljust(19) + " " + ("✓" if ok else "✗")
    elif note is not None:
        line = line.ljust(2 + 34 + 26 - 1) + " " + note
    say(line)


def ms(v):
    return "?" if v is None else f"{v:.1f}"


def cpu(v):
    return "?" if v is None else f"{v:.1f} %"


def report(r):
    """The figures; (n/m) after the page's: samples read of frames painted in the window."""
    p50, p95 = percentile(r.samples, 0.5), percentile(r.samples, 0.95)
    row("page glass-to-glass p50 / p95", f"{ms(p50)} / {ms(p95)} ms ({len(r.samples)}/{r.painted_frames})",
        goal=f"p95 ≤ {GOAL_P95:.0f} ms", ok=p95 is not None and p95 <= GOAL_P95)
    row("node glass-to-glass p50 / p95", f"{ms(r.node_p50)} / {ms(r.node_p95)} ms ({r.node_intervals})",
        note="(reference: the viewer node's stats)")
    if None not in (p50, p95, r.node_p50, r.node_p95):
        row("  the page adds, p50 / p95", f"{p50 - r.node_p50:+.1f} / {p95 - r.node_p95:+.1f} ms",
            note="(WebSocket, WebCodecs decode, wait for the paint)")
    if r.overrun:
        say("    (a poll came late: more frames than the page keeps arrived between two; some samples are missing)")
    row("page painted / decoded", f"{r.painted:.1f} / {r.decoded:.1f} fps",
        note=f"(node decoded {r.node_fps:.1f} fps)" if r.node_fps is not None else None)
    row("page audio decoded", f"{r.audio:.1f} Opus frames/s")
    row("viewer node CPU", cpu(r.viewer_cpu) + " of one core", note="(reference: decodes as well, and serves the page)")
    # Chromium runs three renderers here: the page's, its own UI's (--top-chrome-webui)
    # and one more; the other two stay idle, so the busiest is the page's.
    renderers = sorted((c for c in r.chromium if c[0] == "renderer"), key=lambda c: -c[2])
    if renderers:
        row("Chromium renderer (the page)", cpu(renderers[0][2]) + " of one core",
            note=f"({r.version}; the busiest renderer)")
    if len(renderers) > 1:
        row(f"  other renderers ({len(renderers) - 1})", cpu(sum(c[2] for c in renderers[1:])))
    by_role = {}
    for role, _, value in r.chromium:
        if role != "renderer":
            by_role[role] = by_role.get(role, 0.0) + value
    for role in sorted(by_role, key=lambda k: -by_role[k]):
        row(f"Chromium {role}", cpu(by_role[role]))
    total = sum(c[2] for c in r.chromium)
    row("Chromium, all processes", cpu(total), note="(chromedriver left out)")
    say(f"    host (encodes 640x360@30 and the tone) {cpu(r.host_cpu)}; {r.seconds:.1f} s window")
    if r.gift_failed:
        say(f"  big gifts: FAILED: {r.gift_failed}")
    elif r.gift_during is not None:
        ratio = f"{r.gift_during / r.gift_before:.2f}×" if r.gift_before else "?"
        row("canvas while rockets fly / before", f"{r.gift_during:.1f} / {r.gift_before:.1f} fps, {ratio}",
            note=f"(reference: the page just before; {r.gift_flights} of {ROCKETS} rockets off by the end)")
        if r.gift_flights < 2:
            say("    (the second rocket had not taken off by the window's end: part of it had none flying)")


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    say()
    reason = missing()
    if reason:
        say(f"studio page: skipped, {reason}")
        return
    run = Run(seconds)
    say(f"studio page: glass-to-glass into a viewer's page in headless Chromium (Selenium), lvbnode release binary "
        f"as processes on loopback UDP ({node.binary()})")
    say(f"  host --size {SIZE} --fps {FPS}, synthetic picture and tone; one viewer --web 0; "
        f"{WARM_UP:.0f} s warm-up, then a {run.window:.0f} s window")
    say("  page: Date.now() at the canvas paint − capture time, every frame painted in the window; "
        "node: median of its 2 s stats intervals' video_latency p50 / p95; CPU: utime + stime, % of one core")
    say(f"  then {ROCKETS} rockets from the viewer's console: frames painted per second over {GIFT_WINDOW:.1f} s "
        "while they fly, against as long just before")
    # A SIGTERM still ends the browser and both nodes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run.start()
        run.measure()
        try:
            run.measure_gifts()
        except Exception as error:  # the window's figures still print
            run.gift_failed = str(error)
    except Exception as error:  # a bench prints what failed and goes on
        say(f"  FAILED: {error}")
        return
    finally:
        run.close()
    report(run)


if __name__ == "__main__":
    main()
