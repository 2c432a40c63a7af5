"""The release binary run as a separate process (like
Tests/EndToEndTests/NodeProcess.swift): its --json lines collected as they
arrive, its stdin open for console commands, and every process started here
ended by `stop_all` whatever happens to the test."""

import json
import os
import signal
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_started = []


def binary():
    """$LVBNODE_BIN (Scripts/test sets it), else the release build."""
    return os.environ.get("LVBNODE_BIN") or os.path.join(ROOT, ".build", "release", "lvbnode")


class Node:
    def __init__(self, name, arguments):
        self.name = name
        self.events = []
        self.stderr_lines = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen([binary()] + arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, bufsize=1)
        _started.append(self)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    @classmethod
    def host(cls, *extra):
        return cls("host", ["host", "--ephemeral", "--listen", "127.0.0.1:0", "--web", "0", "--json", *extra])

    @classmethod
    def join(cls, name, ticket, *extra):
        return cls(name, ["join", ticket, "--ephemeral", "--listen", "127.0.0.1:0", "--web", "0", "--json", *extra])

    def _read_stdout(self):
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                with self._changed:
                    self.events.append(event)
                    self._changed.notify_all()

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def wait_for(self, name, timeout=15, match=lambda e: True):
        """The first event `name` for which `match` holds; fails the test
        with the process's recent output when none comes in time."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for event in self.events:
                    if event.get("event") == name and match(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    break
                self._changed.wait(min(left, 0.2))
        raise AssertionError(f"{self.name}: no '{name}' event within {timeout} s; {self.describe()}")

    def describe(self):
        names = [e.get("event") for e in self.events[-15:]]
        state = "running" if self.process.poll() is None else f"exited {self.process.returncode}"
        return f"{state}; last events {names}; stderr: {' | '.join(self.stderr_lines[-8:])}"

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self, timeout=5):
        """/quit, then SIGTERM, then SIGKILL: the process is gone on return."""
        if self.process.poll() is None:
            try:
                self.send("/quit")
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        try:
            self.process.stdin.close()
        except (BrokenPipeError, ValueError, OSError):
            pass
        return self.process.returncode


def stop_all():
    """Ends every node this run started, newest first (viewers before the host)."""
    while _started:
        _started.pop().stop()


def shut(browser):
    """Quits `browser` (if any), then ends every node started here, whatever happens."""
    try:
        if browser:
            browser.quit()
    finally:
        stop_all()


class World:
    """A test script's nodes and browser: a subclass's `_start` starts them;
    if it fails part way, `close` ends whatever it had started. `close`
    quits the browser and ends every node (again: nothing happens)."""

    def __init__(self):
        self.browser = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self):
        raise NotImplementedError

    def close(self):
        browser, self.browser = self.browser, None
        shut(browser)


def main(name, missing, cleanup):
    """A browser test script's main: --check says what is missing (exit 1);
    otherwise the tests run (exit 2 when something is missing), and
    `cleanup()` then every node ends, even on SIGTERM (the Swift test's timeout)."""
    import signal
    import sys
    import time
    import unittest
    if sys.argv[1:] == ["--check"]:
        reason = missing()
        print(reason or "ok")
        sys.exit(1 if reason else 0)
    reason = missing()
    if reason:
        print(f"{name}: {reason} (Scripts/setup installs what is missing)", file=sys.stderr)
        sys.exit(2)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        result = unittest.main(module="__main__", exit=False, verbosity=2).result
    finally:
        cleanup()
        stop_all()
    print(f"{name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    sys.exit(0 if result.wasSuccessful() else 1)
