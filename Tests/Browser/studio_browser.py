"""Headless Chromium driven by Selenium: one browser, one window per studio
page (windows, not tabs, so every page stays visible and keeps painting)."""

import base64
import os
import shutil
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import pngimage

CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--autoplay-policy=no-user-gesture-required",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    "--window-size=1000,900", "--disable-dev-shm-usage", "--mute-audio",
    "--no-first-run", "--disable-extensions", "--disable-background-networking",
]


def chromium_path():
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def chromedriver_path():
    return os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")


def missing():
    """What the browser tests lack on this machine (Scripts/setup installs it), or None."""
    if not chromium_path():
        return "chromium is not installed"
    if not chromedriver_path():
        return "chromedriver (Debian's chromium-driver) is not installed"
    return None


class Browser:
    def __init__(self, extra_flags=()):
        options = webdriver.ChromeOptions()
        options.binary_location = chromium_path()
        for flag in CHROMIUM_FLAGS + list(extra_flags):
            options.add_argument(flag)
        # An explicit driver: Selenium Manager would try to download one.
        self.driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver_path()))
        self.driver.set_page_load_timeout(15)
        self._first = self.driver.current_window_handle
        self._used_first = False

    def open(self, url):
        """Opens `url` in a window of its own and returns that page."""
        if self._used_first:
            self.driver.switch_to.new_window("window")
        self._used_first = True
        self.driver.get(url)
        return Page(self.driver, self.driver.current_window_handle)

    def quit(self):
        self.driver.quit()


class Page:
    """One studio page. Every call first brings its window to the driver."""

    def __init__(self, driver, handle):
        self.driver = driver
        self.handle = handle

    def _focus(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def find(self, css):
        return self._focus().find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        return self._focus().find_elements(By.CSS_SELECTOR, css)

    def script(self, source, *args):
        return self._focus().execute_script(source, *args)

    def studio(self, key):
        """A field of window.lvbStudio (None before the page set it up)."""
        return self.script("return window.lvbStudio ? window.lvbStudio[arguments[0]] : null", key)

    def wait(self, condition, timeout=10, message=""):
        """Polls `condition(page)` until it returns something truthy."""
        self._focus()
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1,
                                 ignored_exceptions=(StaleElementReferenceException,)).until(lambda _: condition(self))
        except TimeoutException:
            raise AssertionError(f"{message or 'page condition'} not met within {timeout} s; {self.describe()}") from None

    def reload(self):
        """Loads the page again (its URL keeps the token) and waits for its WebSocket."""
        self._focus().refresh()
        self.wait(lambda p: p.studio("wsState") == "open", 10, "the reloaded page's WebSocket open")

    def texts(self, css):
        return [e.text for e in self.find_all(css)]

    def describe(self):
        state = self.script("""
            const s = window.lvbStudio || {};
            const status = document.getElementById('status');
            return {ws: s.wsState, video: s.videoFramesDecoded, painted: s.videoFramesPainted,
                    audio: s.audioFramesDecoded, status: status && status.textContent};""")
        logs = []
        try:
            logs = [entry["message"] for entry in self._focus().get_log("browser")][-5:]
        except Exception:
            pass
        return f"page {state}; console {logs}"

    def screenshot(self):
        """The #video canvas as shown, decoded: the layers above it (bullet
        comments, widgets, controls, overlays) are hidden for the moment of
        the shot, since the page lays its room head and buttons over the
        picture's top rows and its corners.

        The shot is what Selenium's element screenshot takes (DevTools'
        Page.captureScreenshot clipped to the element), asked for with
        optimizeForSpeed: Chromium then filters every row with Up, which
        decodes in milliseconds, where its default Paeth rows cost pure
        Python about a second per shot on this machine."""
        box = self.script("""
            for (const el of document.querySelectorAll('#stage > :not(#video)')) {
                el.dataset.testVisibility = el.style.visibility;
                el.style.visibility = 'hidden';
            }
            const r = document.getElementById('video').getBoundingClientRect();
            return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, scale: 1};""")
        try:
            shot = self.driver.execute_cdp_cmd("Page.captureScreenshot",
                                               {"format": "png", "optimizeForSpeed": True, "clip": box})
            return pngimage.decode(base64.b64decode(shot["data"]))
        finally:
            self.script("""
                for (const el of document.querySelectorAll('#stage > :not(#video)')) {
                    el.style.visibility = el.dataset.testVisibility;
                    delete el.dataset.testVisibility;
                }""")

    def canvas_fit(self):
        """(source width, source height, CSS object-fit) of the #video canvas."""
        return tuple(self.script("""
            const c = document.getElementById('video');
            return [c.width, c.height, getComputedStyle(c).objectFit || 'fill'];"""))

    def sleep(self, seconds):
        time.sleep(seconds)
