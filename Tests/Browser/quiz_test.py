#!/usr/bin/env python3
"""The online quiz on the studio page in a real browser: a host ("anchor")
and two viewers ("alice", "bob") each serving its page (--web), and a
console guest ("carl") on stage so that the pictures carry a co-host's
tile, all the release binary ($LVBNODE_BIN) as processes. The host asks
from its page's form; both viewer pages show the card with a button per
option and a running countdown; alice clicks an option and her card says
it counted, a second click does nothing, and a reloaded page still shows
her answer; bob answers on his console and his page marks it. The card
covers neither carl's tile nor the buttons on the right. When the time is
up both pages show the host's tally as bars; the host's page reveals the
right option, and the viewer pages highlight it and name alice the winner.

    python3 Tests/Browser/quiz_test.py          # the tests
    python3 Tests/Browser/quiz_test.py --check  # says what is missing, exit 1
    QUIZ_SCREENSHOT=/tmp/quiz.png python3 Tests/Browser/quiz_test.py   # also keeps a shot of alice's page

Run from the suite by Tests/EndToEndTests/StudioBrowserTests.swift."""

import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import node  # noqa: E402
from studio_test import SIZE, missing  # noqa: E402

QUESTION = "Which planet is the largest?"
OPTIONS = ["Mars", "Jupiter", "Venus", "Earth"]
# How long the quiz is open: enough for every check made while it is open (about 10 s here), on a slow machine too.
SECONDS = 30
ALICE, BOB, RIGHT = 2, 4, 2

world = None


class QuizRoom(node.World):
    def _start(self):
        import studio_browser
        started = time.monotonic()
        self.host = node.Node.host("--nick", "anchor", "--title", "Quiz night", "--size", f"{SIZE[0]}x{SIZE[1]}")
        ticket = self.host.wait_for("ready")["ticket"]
        self.alice = node.Node.join("alice", ticket, "--nick", "alice")
        self.bob = node.Node.join("bob", ticket, "--nick", "bob")
        self.carl = node.Node("carl", ["join", ticket, "--ephemeral", "--listen", "127.0.0.1:0", "--json", "--nick", "carl"])
        for n in (self.alice, self.bob, self.carl):
            n.wait_for("admitted")
        self.carl.send("/linkmic")
        self.host.wait_for("linkmic_request", 10, lambda e: e.get("nick") == "carl")
        self.host.send("/accept carl")
        self.browser = studio_browser.Browser()
        self.pages = {}
        for n in (self.host, self.alice, self.bob):
            self.pages[n.name] = self.browser.open(n.wait_for("web")["url"])
        for name, page in self.pages.items():
            page.wait(lambda p: p.studio("wsState") == "open", 10, f"{name}'s page WebSocket open")
        self.host.wait_for("linkmic_started", 10)
        print(f"room and pages ready in {time.monotonic() - started:.1f} s", file=sys.stderr)


def setUpModule():
    global world
    world = QuizRoom()


def tearDownModule():
    if world:
        world.close()


def card(page):
    """The quiz card as the page shows it (its DOM text and state), or None while it is hidden."""
    return page.script("""
        const c = document.querySelector('.quiz-card');
        if (!c || c.offsetParent === null) return null;
        const text = (e) => e ? e.textContent : null;
        const winners = c.querySelector('.quiz-winners');
        return {
          phase: c.dataset.phase, time: text(c.querySelector('.quiz-time')),
          question: text(c.querySelector('.quiz-question')),
          options: [...c.querySelectorAll('.quiz-option')].map((o) => ({
            n: Number(o.dataset.option), text: text(o.querySelector('.quiz-text')),
            count: text(o.querySelector('.quiz-count')), button: o.tagName === 'BUTTON',
            enabled: o.tagName === 'BUTTON' && !o.disabled, chosen: 'chosen' in o.dataset,
            right: 'right' in o.dataset, reveal: o.querySelector('.quiz-reveal') !== null})),
          status: text(c.querySelector('.quiz-status')),
          statusKind: c.querySelector('.quiz-status').dataset.status ?? null,
          winners: winners.hidden ? null : winners.textContent};""")


def option(page, n, css=""):
    """Option n's element (or the element `css` inside it), found afresh: the card is redrawn on each event."""
    return page.find(f'.quiz-card .quiz-option[data-option="{n}"] {css}'.strip())


def overlaps(page, names):
    """Which of the elements `names` (CSS selectors) the quiz card overlaps
    on the page, and whether it overlaps the co-host's pip tile in the
    picture (StageLayout: a quarter of the width, a twentieth of the
    shorter side from the bottom-right corner)."""
    return page.script("""
        const box = (r) => ({l: r.left, t: r.top, r: r.right, b: r.bottom});
        const card = box(document.querySelector('.quiz-card').getBoundingClientRect());
        const hit = (o) => Math.min(card.r, o.r) - Math.max(card.l, o.l) > 0.5 && Math.min(card.b, o.b) - Math.max(card.t, o.t) > 0.5;
        const out = [];
        for (const css of arguments[0]) {
          for (const e of document.querySelectorAll(css)) {
            if (e.offsetParent !== null && hit(box(e.getBoundingClientRect()))) out.push(css);
          }
        }
        const v = document.getElementById('video'), r = v.getBoundingClientRect();
        const scale = Math.min(r.width / v.width, r.height / v.height);
        const x = r.left + (r.width - v.width * scale) / 2, y = r.top + (r.height - v.height * scale) / 2;
        const w = v.width, h = v.height, tw = w / 4, th = tw * h / w, m = Math.min(w, h) / 20;
        const tile = {l: x + (w - m - tw) * scale, t: y + (h - m - th) * scale, r: x + (w - m) * scale, b: y + (h - m) * scale};
        if (hit(tile)) out.push('the pip tile');
        return out;""", names)


def quiz_events(n, kind):
    return [e for e in n.events if e.get("event") == kind]


class QuizPageTests(unittest.TestCase):
    """Named in the order they run: one quiz, from the ask to the winners."""

    def setUp(self):
        self.started = time.monotonic()

    def tearDown(self):
        print(f"({time.monotonic() - self.started:.1f} s)", end=" ", file=sys.stderr, flush=True)

    def test_1_the_host_asks_from_its_page_and_both_viewer_pages_show_the_card_with_a_countdown(self):
        host, alice, bob = world.pages["host"], world.pages["alice"], world.pages["bob"]
        self.assertFalse(any(t.is_displayed() for t in alice.find_all(".quiz-ask-toggle")), "a viewer's page offers no quiz to ask")
        host.wait(lambda p: p.find(".quiz-ask-toggle").is_displayed(), 5, "Ask a quiz on the host's page")
        host.find(".quiz-ask-toggle").click()
        host.wait(lambda p: p.find(".quiz-form").is_displayed(), 2, "the host's quiz form open")
        inputs = host.find_all(".quiz-form input")
        inputs[0].send_keys(QUESTION)
        inputs[1].send_keys(" | ".join(OPTIONS))
        inputs[2].clear()
        inputs[2].send_keys(str(SECONDS))
        host.find(".quiz-form .quiz-ask").click()

        asked = world.host.wait_for("quiz", 10)
        self.assertEqual((asked["question"], asked["options"], asked["seconds"]), (QUESTION, OPTIONS, SECONDS), f"{asked}")
        world.quiz = asked["id"]
        for name, page in (("alice", alice), ("bob", bob)):
            shown = page.wait(lambda p: (c := card(p)) and c["phase"] == "open" and c, 10, f"the quiz card on {name}'s page")
            self.assertEqual(shown["question"], QUESTION)
            self.assertEqual([o["text"] for o in shown["options"]], OPTIONS)
            self.assertTrue(all(o["enabled"] for o in shown["options"]), f"one live button per option on {name}'s page: {shown}")
            self.assertEqual(shown["status"], "Pick one: one answer counts.")
        first = card(alice)["time"]
        time.sleep(1.3)
        second = card(alice)["time"]
        self.assertRegex(first, r"^0:[0-3]\d$", f"a {SECONDS}-second quiz's countdown")
        self.assertRegex(second, r"^0:\d\d$")
        self.assertLess(second, first, f"the countdown runs: {first} then {second}")
        print(f"countdown {first} then {second}", file=sys.stderr)

        # The host's card: no answer buttons, a Reveal per option (to end it early), no new ask while open.
        mine = host.wait(lambda p: (c := card(p)) and c["phase"] == "open" and c, 5, "the quiz card on the host's page")
        self.assertFalse(any(o["button"] for o in mine["options"]), f"no answer buttons for the host: {mine}")
        self.assertTrue(all(o["reveal"] for o in mine["options"]), f"a Reveal button per option for the host: {mine}")
        self.assertFalse(host.find(".quiz-ask-toggle").is_displayed(), "no new quiz while one is open")
        self.assertFalse(host.find(".quiz-form").is_displayed(), "the form closes once the quiz is out")

    def test_2_alices_click_counts_once_and_bobs_console_answer_shows_on_his_page(self):
        host, alice, bob = world.pages["host"], world.pages["alice"], world.pages["bob"]
        option(alice, ALICE).click()
        answered = world.alice.wait_for("quiz_answer", 10, lambda e: e.get("status") == "counted")
        self.assertEqual((answered["id"], answered["answer"]), (world.quiz, ALICE), f"{answered}")
        shown = alice.wait(lambda p: (c := card(p)) and c["statusKind"] == "counted" and c, 5, "alice's answer counted on her card")
        self.assertEqual(shown["status"], "Your answer counted")
        self.assertEqual([o["n"] for o in shown["options"] if o["chosen"]], [ALICE], f"alice's choice marked: {shown}")
        self.assertFalse(any(o["enabled"] for o in shown["options"]), f"every button disabled after the answer: {shown}")

        # A second click does nothing: the node hears no second answer (it would refuse it with an error).
        option(alice, 1).click()
        time.sleep(0.5)
        self.assertEqual(quiz_events(world.alice, "error"), [], "a second answer reached alice's node")
        self.assertEqual({e["answer"] for e in quiz_events(world.alice, "quiz_answer")}, {ALICE})
        self.assertEqual([o["n"] for o in card(alice)["options"] if o["chosen"]], [ALICE])

        world.bob.send(f"/answer {BOB}")
        world.bob.wait_for("quiz_answer", 10, lambda e: e.get("status") == "counted")
        shown = bob.wait(lambda p: (c := card(p)) and c["statusKind"] == "counted" and c, 5, "bob's console answer on his card")
        self.assertEqual([o["n"] for o in shown["options"] if o["chosen"]], [BOB], f"bob's choice marked: {shown}")
        self.assertFalse(any(o["enabled"] for o in shown["options"]), f"bob's buttons disabled: {shown}")

        # A page that connects mid-quiz gets the quiz and its own answer in its greeting.
        alice.reload()
        shown = alice.wait(lambda p: (c := card(p)) and c["statusKind"] == "counted" and c, 5, "the card on alice's reloaded page")
        self.assertEqual(shown["phase"], "open")
        self.assertEqual([o["n"] for o in shown["options"] if o["chosen"]], [ALICE])
        self.assertFalse(any(o["enabled"] for o in shown["options"]))

    def test_3_the_card_covers_neither_the_co_hosts_tile_nor_the_buttons(self):
        alice, host = world.pages["alice"], world.pages["host"]
        alice.wait(lambda p: (p.studio("videoFramesPainted") or 0) > 10, 10, "alice's canvas painting")
        hit = overlaps(alice, [".room-head", "#status", ".page-tools", ".viewers", ".actions", ".chat", ".rank"])
        self.assertEqual(hit, [], "the quiz card on alice's page overlaps")
        hit = overlaps(host, [".room-head", ".host-tools", ".page-tools", ".viewers", ".linkmic-host", ".actions", ".chat"])
        self.assertEqual(hit, [], "the quiz card on the host's page overlaps")
        shot = os.environ.get("QUIZ_SCREENSHOT")
        if shot:
            alice.find("#stage").screenshot(shot)
            print(f"wrote {shot}", file=sys.stderr)

    def test_4_when_the_time_is_up_the_pages_show_the_tally_as_bars(self):
        host, alice, bob = world.pages["host"], world.pages["alice"], world.pages["bob"]
        result = world.host.wait_for("quiz_result", SECONDS + 10, lambda e: e.get("id") == world.quiz)
        self.assertEqual((result["counts"], result["answers"], result["answer"]), ([0, 1, 0, 1], 2, None), f"{result}")
        counts = ["0 · 0%", "1 · 50%", "0 · 0%", "1 · 50%"]
        for name, page in (("alice", alice), ("bob", bob), ("host", host)):
            shown = page.wait(lambda p: (c := card(p)) and c["phase"] == "closed" and c, 10, f"the tally on {name}'s page")
            self.assertEqual([o["count"] for o in shown["options"]], counts, f"{name}'s bars: {shown}")
            self.assertEqual(shown["time"], "Closed")
            self.assertFalse(any(o["enabled"] for o in shown["options"]), f"nothing to click on {name}'s card: {shown}")
            self.assertFalse(any(o["right"] for o in shown["options"]), f"no right answer yet on {name}'s page")
        # The bars: option 2's fill half the row once its transition is over, option 1's empty.
        fills = ("return [...document.querySelectorAll('.quiz-card .quiz-fill')]"
                 ".map((f) => getComputedStyle(f).transform)")
        alice.wait(lambda p: re.match(r"matrix\(0\.5, 0, 0, 1,", p.script(fills)[1]), 3,
                   f"option 2's bar half full on alice's page ({alice.script(fills)})")
        self.assertTrue(re.match(r"matrix\(0, 0, 0, 1,", alice.script(fills)[0]), f"option 1's bar empty: {alice.script(fills)}")
        self.assertEqual(card(bob)["status"], "Your answer counted", "bob's status stays his answer's")
        shown = card(host)
        self.assertTrue(all(o["reveal"] for o in shown["options"]), f"a Reveal button per option on the host's page: {shown}")
        self.assertEqual(shown["status"], "2 answers. Reveal the right one.")
        self.assertTrue(host.find(".quiz-ask-toggle").is_displayed(), "the host may ask again once the quiz is closed")

    def test_5_the_hosts_reveal_highlights_the_right_option_and_names_the_winner(self):
        host, alice, bob = world.pages["host"], world.pages["alice"], world.pages["bob"]
        option(host, RIGHT, ".quiz-reveal").click()
        result = world.host.wait_for("quiz_result", 10, lambda e: e.get("id") == world.quiz and e.get("answer") == RIGHT)
        self.assertEqual([w["nick"] for w in result["winners"]], ["alice"], f"{result}")
        for name, page in (("alice", alice), ("bob", bob), ("host", host)):
            shown = page.wait(lambda p: (c := card(p)) and c["phase"] == "revealed" and c, 10, f"the right option on {name}'s page")
            self.assertEqual([o["n"] for o in shown["options"] if o["right"]], [RIGHT], f"{name}: {shown}")
            self.assertEqual(shown["winners"], "Right: alice", f"{name}: {shown}")
            self.assertEqual([o["count"] for o in shown["options"]], ["0 · 0%", "1 · 50%", "0 · 0%", "1 · 50%"])
            self.assertFalse(any(o["reveal"] for o in shown["options"]), f"nothing more to reveal on {name}'s page")
        self.assertEqual(card(alice)["status"], "Your answer counted · right!")
        self.assertEqual(card(bob)["status"], "Your answer counted · not this time")


if __name__ == "__main__":
    node.main("quiz_test", missing, lambda: world and world.close())
