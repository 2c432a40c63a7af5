#!/usr/bin/env python3
"""Join -> first picture behind real NATs against loopback, in the same run.

Runs the demo mesh (`lvbnode mesh`, the release binary as processes) on
loopback, then with every node behind its own NAT in network namespaces
(`--nat`), then with three of the six viewers behind hard NATs
(`--nat --hard-nats 3`: birthday punching), and prints each variant's
join -> first decoded picture (min, median, max over every viewer of every
run) and its median against loopback's, and how the tree links ran.
A benchmark: prints figures, never fails on them. Needs root, ip and nft
for the NAT variants (skipped, saying why, without them).
Usage: join_bench.py [seconds]  (runs per variant: max(1, seconds // 3))
"""
import json
import os
import shutil
import statistics
import subprocess
import sys

BIN = os.environ.get("LVBNODE_BIN", ".build/release/lvbnode")


def mesh(extra):
    cmd = [BIN, "mesh", "--viewers", "6", "--guests", "0", "--duration", "14", "--json"] + extra
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    for line in out.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "summary":
            return event
    raise RuntimeError(f"{' '.join(cmd)}: no summary (exit {out.returncode}): {out.stderr[-400:]}")


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = max(1, seconds // 3)
    variants = [("loopback", [])]
    why = None
    if os.geteuid() != 0:
        why = "it needs root (network namespaces and nftables)"
    elif not shutil.which("ip") or not shutil.which("nft"):
        why = "ip or nft is not installed"
    if why:
        print(f"join bench: the NAT variants are skipped: {why}")
    else:
        variants += [("behind NATs", ["--nat"]), ("3 of 6 behind hard NATs", ["--nat", "--hard-nats", "3"])]
    medians = {}
    for name, extra in variants:
        firsts, links = [], {}
        for _ in range(runs):
            s = mesh(extra)
            firsts += s.get("first_frame_ms", [])
            for key in ("tree_links_direct", "tree_links_birthday", "tree_links_relayed", "tree_links_member_relay"):
                links[key] = links.get(key, 0) + s.get(key, 0)
        if not firsts:
            print(f"join bench ({name}): no viewer decoded a picture")
            continue
        median = statistics.median(firsts)
        medians[name] = median
        ratio = f", {median / medians['loopback']:.2f}x loopback's median" if name != "loopback" and medians.get("loopback") else ""
        print(f"join bench ({name}, {runs} run{'s' if runs > 1 else ''}, {len(firsts)} joins): join -> first picture "
              f"min {min(firsts):.0f} ms, median {median:.0f} ms, max {max(firsts):.0f} ms{ratio}; "
              f"tree links {links['tree_links_direct']} direct ({links['tree_links_birthday']} by birthday punching), "
              f"{links['tree_links_relayed']} relayed ({links['tree_links_member_relay']} by a member)")


if __name__ == "__main__":
    main()
