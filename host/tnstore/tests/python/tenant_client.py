#!/usr/bin/env python3
"""Reaches a tenant's namespace with the official A2A Python SDK's client (a2a-sdk, pinned in
tests/python/requirements.txt), the way the A2A 1.0 card says to: by the interface that
declares the tenant.

    tenant_client.py URL --tenant NAME --binding JSONRPC|HTTP+JSON [--ca FILE]

Reads the card at URL/.well-known/agent-card.json (trusting only the CA in FILE when given, for
HTTPS), keeps the interfaces of --binding that declare `"tenant": NAME`, and gives that card to
the SDK's ClientFactory, which wraps its transport so every request carries the tenant. Then:
a blocking send of "hello tenant" (a completed Task echoing it), and a get of that Task.

Prints one JSON line: `ok`, the Task id, the chosen interface, and each request's method, path
and JSON-RPC `params.tenant`. Exits 1 (with the reason on stderr) on any mismatch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


class Mismatch(Exception):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


async def run(args: argparse.Namespace) -> dict:
    requests: list[dict] = []

    async def on_request(request: httpx.Request) -> None:
        seen = {"method": request.method, "path": request.url.path}
        if request.method == "POST" and request.content:
            try:
                body = json.loads(request.content)
                if isinstance(body, dict) and "jsonrpc" in body:
                    seen["tenant"] = body.get("params", {}).get("tenant")
            except ValueError:
                pass
        requests.append(seen)

    http = httpx.AsyncClient(
        verify=args.ca if args.ca else True,
        timeout=httpx.Timeout(30),
        event_hooks={"request": [on_request]},
    )
    try:
        config = ClientConfig(
            streaming=False, supported_protocol_bindings=[args.binding], httpx_client=http
        )
        factory = ClientFactory(config)
        card = await A2ACardResolver(http, args.url).get_agent_card()
        keep = [
            i
            for i in card.supported_interfaces
            if i.protocol_binding == args.binding and i.tenant == args.tenant
        ]
        expect(
            bool(keep),
            f"the card declares no {args.binding} interface for tenant {args.tenant!r}: "
            f"{[(i.url, i.protocol_binding, i.protocol_version, i.tenant) for i in card.supported_interfaces]}",
        )
        narrowed = AgentCard()
        narrowed.CopyFrom(card)
        del narrowed.supported_interfaces[:]
        narrowed.supported_interfaces.extend(keep)
        client = factory.create(narrowed)
        try:
            message = Message(
                role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text="hello tenant")]
            )
            answers = [a async for a in client.send_message(SendMessageRequest(message=message))]
            expect(len(answers) == 1, f"a blocking send yielded {len(answers)} answers")
            expect(answers[0].WhichOneof("payload") == "task", f"not a Task: {answers[0]}")
            task = answers[0].task
            got = await client.get_task(GetTaskRequest(id=task.id))
            expect(got.id == task.id, f"get answered Task {got.id}, not {task.id}")
            expect(
                got.status.state == TaskState.TASK_STATE_COMPLETED,
                f"Task {task.id} is {TaskState.Name(got.status.state)}, not completed",
            )
        finally:
            await client.close()
        chosen = keep[0]
        return {
            "ok": True,
            "task_id": task.id,
            "card_name": card.name,
            "interface": {
                "url": chosen.url,
                "protocolBinding": chosen.protocol_binding,
                "protocolVersion": chosen.protocol_version,
                "tenant": chosen.tenant,
            },
            "requests": requests,
        }
    finally:
        await http.aclose()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--binding", required=True, choices=["JSONRPC", "HTTP+JSON"])
    parser.add_argument("--ca")
    args = parser.parse_args()
    try:
        report = asyncio.run(run(args))
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        print(json.dumps({"ok": False, "error": str(e)}))
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
