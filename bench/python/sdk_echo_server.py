#!/usr/bin/env python3
"""The official A2A Python SDK's server with the same echo agent as `tnstore serve`.

    python bench/python/sdk_echo_server.py --port 8081 --store memory
    python bench/python/sdk_echo_server.py --port 8081 --store sqlite[:PATH]

The peer that `tn-serve-load` (bench/src/serve_load.rs) measures our server against. Install
the pinned dependencies first (`pip install -r bench/python/requirements.txt`: a2a-sdk 1.3.0
with its HTTP-server and SQLite extras, and uvicorn).

What it serves, all from a2a-sdk 1.3.0 (A2A 1.0, with the SDK's 0.3 compatibility on):
  POST /                          JSON-RPC: 1.0 methods (SendMessage, GetTask,
                                  SendStreamingMessage, ...) and the 0.3 ones (message/send,
                                  tasks/get, message/stream, ...) on the same endpoint
  /message:send, /tasks/{id}, ... HTTP+JSON (1.0), and the SDK's 0.3 REST routes under /v1
  GET /.well-known/agent-card.json  the agent card, with supportedInterfaces for both bindings

The agent (the request handler is the SDK's DefaultRequestHandler): for each message it
publishes the Task (submitted) if there is none yet, marks it working, adds one artifact named
"reply" whose one text part is the message's text parts joined with newlines, and completes it,
as `tnstore serve --echo-delay-ms 0` does. Stores: `memory` is the SDK's InMemoryTaskStore;
`sqlite` its DatabaseTaskStore (SQLAlchemy async over aiosqlite, SQLite defaults) on PATH, or
on a file in a fresh temporary directory removed on exit.

Served by uvicorn, one process, access log off, log level warning. Prints
`listening on http://127.0.0.1:PORT/ with STORE` once it accepts connections.
"""

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import sys
import tempfile

import uvicorn
from a2a.helpers.proto_helpers import get_text_parts, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import DatabaseTaskStore, InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette


class EchoExecutor(AgentExecutor):
    """submitted -> working -> one "reply" artifact -> completed, like our EchoAgent."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[message] if message is not None else [],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        text = "\n".join(get_text_parts(message.parts)) if message is not None else ""
        await updater.add_artifact([new_text_part(text)], name="reply")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def agent_card(base_url: str) -> AgentCard:
    return AgentCard(
        name="a2a-sdk echo agent",
        description="Replies with the text it is sent (benchmark peer of tnstore serve).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base_url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            # The SDK's 0.3 compatibility: the card also carries the 0.3 fields (`url`,
            # `preferredTransport`, `additionalInterfaces`) built from these.
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="0.3"),
            AgentInterface(url=base_url, protocol_binding="HTTP+JSON", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="Echo",
                description="Replies with the text it is sent.",
                tags=["echo"],
            )
        ],
    )


def make_store(spec: str, cleanup: list[str]):
    if spec == "memory":
        return InMemoryTaskStore(), "memory (InMemoryTaskStore)"
    if spec == "sqlite" or spec.startswith("sqlite:"):
        from sqlalchemy.ext.asyncio import create_async_engine

        path = spec[len("sqlite:") :] if spec.startswith("sqlite:") else ""
        if not path:
            tmp = tempfile.mkdtemp(prefix="sdk-echo-sqlite-")
            cleanup.append(tmp)
            path = os.path.join(tmp, "tasks.db")
        engine = create_async_engine(f"sqlite+aiosqlite:///{os.path.abspath(path)}")
        return DatabaseTaskStore(engine), f"sqlite:{path} (DatabaseTaskStore, aiosqlite)"
    raise SystemExit(f"unknown --store {spec!r}: use memory, sqlite or sqlite:PATH")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--store", default="memory", help="memory | sqlite | sqlite:PATH")
    args = parser.parse_args()

    logging.basicConfig(level=logging.WARNING)
    cleanup: list[str] = []
    store, described = make_store(args.store, cleanup)
    base_url = f"http://{args.host}:{args.port}/"
    card = agent_card(base_url)
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=store, agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True),
        *create_rest_routes(handler, enable_v0_3_compat=True),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if isinstance(store, DatabaseTaskStore):
            await store.initialize()
        try:
            yield
        finally:
            if isinstance(store, DatabaseTaskStore):
                await store.engine.dispose()
            # Here, not after serve(): on SIGTERM uvicorn re-raises the signal once shut down.
            for path in cleanup:
                shutil.rmtree(path, ignore_errors=True)

    app = Starlette(routes=routes, lifespan=lifespan)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        workers=1,
        access_log=False,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)

    async def serve() -> None:
        # uvicorn runs the lifespan startup before it binds the socket: announce only once it
        # accepts connections.
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():
            await asyncio.sleep(0.02)
        if server.started:
            print(f"listening on {base_url} with {described}", flush=True)
        await serving

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    sys.exit(0)


if __name__ == "__main__":
    main()
