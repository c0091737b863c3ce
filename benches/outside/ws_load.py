#!/usr/bin/env python3
"""An outside load generator for the floor relay and hookwire (docs/performance.md, "Two load
generators, one server"): Python, asyncio on uvloop, the `websockets` client, as a user's own
load test would be written. It starts both servers through `cargo bench --bench load -- serve`
(each with its own fake upstream), then loads them in rounds, the one that goes first
alternating, and prints each run's figures and the ratios hookwire / floor as the median of the
rounds [min-max], beside the generator's own CPU.

    python3 -m venv /tmp/ws-load && /tmp/ws-load/bin/pip install uvloop==0.21.0 websockets==15.0.1
    /tmp/ws-load/bin/python benches/outside/ws_load.py --rounds 3 --parse json

`--parse json` reads every frame with `json.loads` (what a client usually does); `--parse none`
only looks for the frame's type in its text. Only loopback addresses are used.
"""

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import time

import uvloop
import websockets

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def kind_of(text, parse):
    if parse == "json":
        return json.loads(text).get("type")
    match = re.search(r'"type":"([a-z_]+)"', text)
    return match.group(1) if match else None


class Figures:
    def __init__(self):
        self.first = []
        self.gaps = []
        self.tokens = 0
        self.chats = 0
        self.failed = 0


async def client(url, n, clients, window, figures, parse):
    start, end = window
    await asyncio.sleep(n / clients)  # the clients start spread over a second
    try:
        async with websockets.connect(url, max_size=None, compression=None) as ws:
            chat = 0
            while time.monotonic() < end:
                chat += 1
                sent = time.monotonic()
                await ws.send(json.dumps({"type": "chat", "id": f"c{chat}", "input": "go"}))
                last = None
                while True:
                    text = await ws.recv()
                    now = time.monotonic()
                    kind = kind_of(text, parse)
                    inside = start <= now < end
                    if kind == "text":
                        if inside:
                            figures.tokens += 1
                            if last is None:
                                figures.first.append(now - sent)
                            else:
                                figures.gaps.append(now - last)
                        last = now
                    elif kind in ("done", "error"):
                        if kind == "error":
                            figures.failed += 1
                        elif inside:
                            figures.chats += 1
                        break
    except (OSError, websockets.WebSocketException):
        figures.failed += 1


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[round((len(values) - 1) * p)] * 1000.0


async def run(url, pid, clients, seconds, parse):
    ramp = 5.0
    start = time.monotonic() + ramp
    window = (start, start + seconds)
    figures = Figures()
    tasks = [
        asyncio.create_task(client(url, n, clients, window, figures, parse))
        for n in range(clients)
    ]
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    server_before, own_before = cpu_seconds(pid), own_cpu_seconds()
    await asyncio.sleep(seconds)
    server_cpu = cpu_seconds(pid) - server_before
    own_cpu = own_cpu_seconds() - own_before
    await asyncio.gather(*tasks)
    return {
        "chats/s": figures.chats / seconds,
        "first token p50": percentile(figures.first, 0.5),
        "first token p99": percentile(figures.first, 0.99),
        "gap p99": max(percentile(figures.gaps, 0.99) - 20.0, 0.01),
        "CPU per token": server_cpu / max(figures.tokens, 1) * 1e6,
        "server CPU %": server_cpu / seconds * 100.0,
        "generator CPU %": own_cpu / seconds * 100.0,
        "failed": figures.failed,
    }


def start_servers():
    bench = subprocess.Popen(
        ["cargo", "bench", "--bench", "load", "--", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    servers = {}
    for line in bench.stdout:
        found = re.match(r"serving (\w+) (\S+) pid (\d+)", line)
        if found:
            servers[found.group(1)] = (found.group(2), int(found.group(3)))
        if len(servers) == 2:
            return bench, servers
    sys.exit("the servers did not start")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parse", choices=["json", "none"], default="json")
    args = parser.parse_args()
    bench, servers = start_servers()
    ratios = {}
    try:
        for round_ in range(args.rounds):
            order = ["floor", "hookwire"] if round_ % 2 == 0 else ["hookwire", "floor"]
            runs = {}
            for name in order:
                url, pid = servers[name]
                runs[name] = await run(url, pid, args.clients, args.seconds, args.parse)
                shown = "  ".join(
                    f"{key} {value:.1f}" for key, value in runs[name].items()
                )
                print(f"  {name:<9} {shown}", flush=True)
                await asyncio.sleep(1.0)
            for key in ("chats/s", "first token p50", "first token p99", "gap p99", "CPU per token"):
                ratios.setdefault(key, []).append(runs["hookwire"][key] / max(runs["floor"][key], 1e-9))
    finally:
        bench.stdin.close()
        bench.wait()
    print(f"hookwire / floor, median of {args.rounds} rounds [min-max], parse={args.parse}:")
    for key, values in ratios.items():
        values.sort()
        print(f"  {key:<16} {values[len(values) // 2]:.2f} [{values[0]:.2f}-{values[-1]:.2f}]")


if __name__ == "__main__":
    uvloop.run(main())
