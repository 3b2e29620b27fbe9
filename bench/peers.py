#!/usr/bin/env python3
"""Benchmark the Python task stores a user might pick instead of ours.

    python bench/peers.py --small SMALL.json --large LARGE.json \
        --iterations N --out results.json [--workdir DIR]

SMALL.json and LARGE.json each hold one A2A Task document (a JSON object with a
string "id", protocol v0.3 shape). Install the pinned dependencies first:
`pip install -r bench/requirements.txt`.

Peers (store / durability):
  py-a2a-memory / none     a2a-sdk's InMemoryTaskStore, as constructed by default
  py-a2a-sqlite / full     a2a-sdk's DatabaseTaskStore, SQLAlchemy async + aiosqlite,
                           SQLite defaults (rollback journal, synchronous=FULL)
  py-a2a-sqlite / relaxed  the same with PRAGMA synchronous=OFF on every connection
  py-file / full|relaxed   one JSON file per Task (see FileTaskStore below)

For each peer: `save` and `get` of the small and the large Task (same id every
time, so saves are upserts and gets hit), each call timed on its own after a
warm-up; and `save-concurrent-8`: rounds of 8 asyncio tasks saving 8 distinct
ids (small Task) through asyncio.gather. For that op one iteration is one round:
the latencies are per round and ops_per_s counts saves (8 per round).

Writes {"python", "a2a_sdk", "records": [...]} to --out and a table to stdout.
"""

import argparse
import asyncio
import contextlib
import importlib.metadata
import json
import math
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import to_core_task
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

WARMUP = 50
CALLERS = 8


class FileTaskStore:
    """The reference file store: one `<id>.json` per Task in a directory.

    Save writes a unique temp file in the same directory and renames it over the
    Task file, so readers see the old or the new version, never a torn one.
    Full durability fdatasyncs the temp file before the rename and fsyncs the directory
    after it; relaxed skips both. The methods are async but block, as the
    reference Python package's do.
    """

    def __init__(self, directory: Path, durable: bool) -> None:
        self.directory = directory
        self.durable = durable
        directory.mkdir(parents=True, exist_ok=True)

    async def save(self, task: dict[str, Any]) -> None:
        data = json.dumps(task, ensure_ascii=False, separators=(",", ":")).encode()
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if self.durable:
                    f.flush()
                    # fdatasync, like the Rust stores (docs/on-disk-format.md).
                    os.fdatasync(f.fileno())
            os.replace(tmp, self.directory / f"{task['id']}.json")
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if self.durable:
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    async def get(self, task_id: str) -> dict[str, Any] | None:
        try:
            data = (self.directory / f"{task_id}.json").read_bytes()
        except FileNotFoundError:
            return None
        task = json.loads(data)
        if not isinstance(task, dict) or task.get("id") != task_id:
            raise ValueError(f"corrupt Task file for id {task_id!r}")
        return task


@dataclass
class Peer:
    """One store under test, seen through a uniform surface.

    `save` and `get` return awaitables straight from the store (no extra
    coroutine layer inside the timed region); `native` turns a Task document
    into the object the store takes, once, outside the timed region.
    """

    store: str
    durability: str
    save: Callable[[Any], Awaitable[None]]
    get: Callable[[str], Awaitable[Any]]
    native: Callable[[dict[str, Any]], Any]


def sdk_task(doc: dict[str, Any]) -> Any:
    """A Task document as the SDK's Task (a v1.0 protobuf message).

    a2a-sdk 1.x stores protobuf Tasks, not pydantic ones; a v0.3 JSON document
    goes through the SDK's own v0.3 pydantic model and compat conversion. That
    model requires "contextId" and "status", which a bare Task document may
    lack: missing ones get defaults here (contextId = the Task id, status
    "unknown") so any document with an "id" can be measured.
    """
    filled = {"contextId": doc["id"], "status": {"state": "unknown"}, **doc}
    return to_core_task(types_v03.Task.model_validate(filled))


def sdk_peer(store_name: str, durability: str, store: Any) -> Peer:
    context = ServerCallContext()
    return Peer(
        store=store_name,
        durability=durability,
        save=lambda task: store.save(task, context),
        get=lambda task_id: store.get(task_id, context),
        native=sdk_task,
    )


def file_peer(directory: Path, durability: str) -> Peer:
    store = FileTaskStore(directory, durable=durability == "full")
    return Peer("py-file", durability, store.save, store.get, native=dict)


async def sqlite_peer(db: Path, durability: str) -> tuple[Peer, AsyncEngine, str]:
    """A DatabaseTaskStore over a fresh SQLite file, with its engine and pragmas."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    if durability == "relaxed":

        @event.listens_for(engine.sync_engine, "connect")
        def _synchronous_off(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA synchronous=OFF")
            cursor.close()

    # The store creates its table in initialize() (save/get would call it
    # lazily on first use; doing it here keeps it out of the measurements).
    store = DatabaseTaskStore(engine)
    await store.initialize()
    async with engine.connect() as conn:
        journal = (await conn.execute(text("PRAGMA journal_mode"))).scalar()
        synchronous = (await conn.execute(text("PRAGMA synchronous"))).scalar()
    pragmas = f"journal_mode={journal} synchronous={synchronous}"
    return sdk_peer("py-a2a-sqlite", durability, store), engine, pragmas


async def timed(
    op: Callable[[], Awaitable[Any]], iterations: int, warmup: int = WARMUP
) -> list[int]:
    """Nanoseconds for each of `iterations` awaits of op(), after `warmup` untimed ones."""
    for _ in range(warmup):
        await op()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        await op()
        samples.append(time.perf_counter_ns() - start)
    return samples


def record(
    peer: Peer, op: str, size: str, samples_ns: list[int], ops_per_sample: int = 1
) -> dict[str, Any]:
    us = sorted(ns / 1000 for ns in samples_ns)
    mean = statistics.fmean(us)
    return {
        "store": peer.store,
        "durability": peer.durability,
        "op": op,
        "size": size,
        "median_us": statistics.median(us),
        "p99_us": us[math.ceil(0.99 * len(us)) - 1],  # nearest rank
        "mean_us": mean,
        "ops_per_s": ops_per_sample * 1e6 / mean,
        "iterations": len(us),
    }


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['store']:<14} {r['durability']:<8} {r['op']:<18} {r['size']:<6}"
        f" {r['median_us']:>11.1f} {r['p99_us']:>11.1f} {r['mean_us']:>11.1f}"
        f" {r['ops_per_s']:>11.0f}",
        flush=True,
    )


async def measure(
    peer: Peer, docs: dict[str, dict[str, Any]], iterations: int
) -> list[dict[str, Any]]:
    records = []
    for size, doc in docs.items():
        task = peer.native(doc)
        samples = await timed(partial(peer.save, task), iterations)
        records.append(record(peer, "save", size, samples))
        # The store must hand back what it was given before its gets count.
        if await peer.get(doc["id"]) != task:
            raise RuntimeError(
                f"{peer.store}/{peer.durability}: get({doc['id']!r}) differs from the saved Task"
            )
        samples = await timed(partial(peer.get, doc["id"]), iterations)
        records.append(record(peer, "get", size, samples))

    small = docs["small"]
    tasks = [peer.native({**small, "id": f"{small['id']}-c{i}"}) for i in range(CALLERS)]

    async def save_round() -> None:
        await asyncio.gather(*(peer.save(task) for task in tasks))

    # Warm up with about WARMUP saves, as the single calls do.
    samples = await timed(save_round, iterations, warmup=math.ceil(WARMUP / CALLERS))
    records.append(record(peer, f"save-concurrent-{CALLERS}", "small", samples, CALLERS))
    for r in records:
        print_row(r)
    return records


async def run(
    docs: dict[str, dict[str, Any]], iterations: int, workdir: Path
) -> list[dict[str, Any]]:
    print(
        f"{'store':<14} {'durab.':<8} {'op':<18} {'size':<6}"
        f" {'median µs':>11} {'p99 µs':>11} {'mean µs':>11} {'ops/s':>11}"
    )
    records = await measure(
        sdk_peer("py-a2a-memory", "none", InMemoryTaskStore()), docs, iterations
    )
    for durability in ("full", "relaxed"):
        peer, engine, pragmas = await sqlite_peer(workdir / f"sqlite-{durability}.db", durability)
        print(f"# py-a2a-sqlite {durability}: {pragmas}")
        try:
            records += await measure(peer, docs, iterations)
        finally:
            await engine.dispose()
    for durability in ("full", "relaxed"):
        records += await measure(
            file_peer(workdir / f"files-{durability}", durability), docs, iterations
        )
    return records


def load_task(path: str) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not doc["id"]:
        raise SystemExit(
            f'{path}: not a Task document (a JSON object with a non-empty string "id")'
        )
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", required=True, help="JSON file with the small Task")
    parser.add_argument("--large", required=True, help="JSON file with the large Task")
    parser.add_argument(
        "--iterations", type=int, default=1000, help="timed calls per record (default 1000)"
    )
    parser.add_argument("--out", required=True, help="where to write the results JSON")
    parser.add_argument(
        "--workdir",
        help="the stores' files go in a fresh subdirectory of this one, removed at the end"
        " (default: the system temp dir)",
    )
    args = parser.parse_args()
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")

    docs = {"small": load_task(args.small), "large": load_task(args.large)}
    sdk_version = importlib.metadata.version("a2a-sdk")
    print(
        f"python {platform.python_version()}, a2a-sdk {sdk_version}, {args.iterations} iterations"
    )
    with tempfile.TemporaryDirectory(prefix="peers-", dir=args.workdir) as workdir:
        records = asyncio.run(run(docs, args.iterations, Path(workdir)))
    result = {"python": platform.python_version(), "a2a_sdk": sdk_version, "records": records}
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
