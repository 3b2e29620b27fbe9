#!/usr/bin/env python3
"""Drives an A2A server with the official A2A Python SDK's client (a2a-sdk, pinned in
requirements.txt next to this file) and checks what it answers.

    sdk_client.py URL --protocol 1.0|0.3 --binding JSONRPC|HTTP+JSON \
        --scenario NAME[,NAME...] [--task-id ID] [--timeout SECONDS] \
        [--slow-text TEXT] [--store-subscriptions]

URL is the agent's base URL (the card is read from URL/.well-known/agent-card.json). Scenarios
(run in the order given, against the one server):

  basic          card; send "hello" (blocking) -> Task completed with artifact "hello"; get it
                 (also with history_length 1); list it (1.0; the SDK's 0.3 transports do not
                 implement ListTasks, which is recorded as a skip); send "hello again" with
                 return_immediately and poll get until it is completed.
  cancel         send with return_immediately to a slow agent (the server runs with a long
                 --echo-delay-ms), cancel -> canceled; get -> canceled; cancel again ->
                 TaskNotCancelableError.
  stream         streaming send of "hello stream": the events end in a terminal `completed`,
                 with the echoed text in an artifact (from a Task snapshot or artifact updates).
  subscribe-start
                 send with return_immediately to a slow agent, subscribe, read the first event
                 (the Task, not terminal), stop reading; the result has `task_id`.
  subscribe-after-restart  (needs --task-id)
                 subscribe to that Task on a server restarted after a crash, which marked it
                 failed. The A2A 1.0 specification (SubscribeToTask; HTTP+JSON binding: "Returns
                 UnsupportedOperationError if the task is in a terminal state") makes that an
                 error, and the SDK's own server (DefaultRequestHandler.on_subscribe_to_task)
                 raises UnsupportedOperationError for it under 1.0 and 0.3. Accepted: exactly
                 that error, or a stream that carries the Task `failed` and ends. Either way get
                 must then answer the Task `failed`.
  not-found      get an unknown id -> TaskNotFoundError.
  events         (the server runs the tck agent) a streaming send of "events:12:40" (12 rounds
                 of a status update "step i" and an artifact update, 40 ms apart) and, once its
                 first event is in, a subscription to the same Task, read concurrently: the
                 send's stream carries exactly the Task, `working`, every round's two events in
                 order and the completion; the subscription carries the Task as it was when it
                 attached, then exactly the send's events from there on, and that Task holds
                 exactly the artifact pieces of the events before.
  events-start   a streaming send of "events:40:500"; reads the first 6 events and stops; the
                 result has `task_id` and `seen` (what those events said).
  push-configs   (the server offers push notifications: a sender is wired and the store keeps
                 push configs) the card declares capabilities.pushNotifications; on a completed
                 Task: create a config with id, token and authentication -> answered as given;
                 get it -> the same; create one without an id -> the server names it; list ->
                 both, by id; delete the first -> get it is TaskNotFoundError; the config
                 methods on an unknown Task -> TaskNotFoundError; a loopback webhook URL ->
                 InvalidParamsError (refused unless the operator allows it); a send carrying a
                 config -> that config is the new Task's. The SDK's 0.3 HTTP+JSON transport
                 implements neither list nor delete (NotImplementedError): recorded as skips.
                 The webhook URLs are https://push.example.invalid/… (never resolved: no Task
                 changes after its configs are set, but the send's, whose deliveries fail).
  events-after-restart  (needs --task-id and --seen)
                 on a server restarted after a crash: get the Task: `failed` (recovery), and
                 every event seen before the crash is in it (its artifact starts with the pieces
                 seen, its history holds the status messages seen, in order); subscribing is
                 UnsupportedOperationError.

For a server whose agent takes no settings and whose requests each run in a fresh instance (the
composed A2A component under a wasi:http host): --slow-text makes cancel and subscribe-start send
that text (to an agent that is slow for it) instead of relying on --echo-delay-ms, and
--store-subscriptions checks the events scenario's concurrent subscription as a reader of the
store (its start, its end and the whole artifact), since saves between two reads arrive merged.

Only the SDK's public client is used: a ClientFactory with a ClientConfig restricting
supported_protocol_bindings to --binding, over the server's card. The SDK picks the protocol
version from the card's supportedInterfaces and always prefers 1.0 when the card offers it
(ClientFactory._find_best_interface), with no client setting to ask for another. So this script
gives the factory the server's card with supportedInterfaces narrowed to the interfaces of the
wanted binding and version; the SDK then uses its 1.0 transport (JsonRpcTransport,
RestTransport; header A2A-Version: 1.0) or its 0.3 compatibility transport (CompatJsonRpcTransport,
CompatRestTransport; header A2A-Version: 0.3, 0.3 method names and /v1/... REST paths). Every
request is recorded (httpx event hooks) and checked to carry the A2A-Version of --protocol.

On success prints one JSON line (`"ok": true`, a result per scenario, the requests made) and
exits 0. On any mismatch prints the same line with `"ok": false`, and on stderr what was
expected, what came back and the requests so far; exits 1. Usage errors exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import traceback
import uuid

import httpx
from packaging.version import InvalidVersion, Version

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
)
from a2a.utils.errors import A2AError

SCENARIOS = (
    "basic",
    "cancel",
    "stream",
    "subscribe-start",
    "subscribe-after-restart",
    "not-found",
    "events",
    "events-start",
    "events-after-restart",
    "push-configs",
)
TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
}
VERSIONS = {"1.0": (1, 0), "0.3": (0, 3)}
CARD_PATH = "/.well-known/agent-card.json"


class Mismatch(Exception):
    """The server (through the SDK) answered something other than what the scenario expects."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Mismatch(message)


def state_name(state: int) -> str:
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower()


def texts_of_task(task) -> list[str]:
    return [get_artifact_text(a, delimiter="") for a in task.artifacts]


def describe_task(task) -> dict:
    return {
        "id": task.id,
        "context_id": task.context_id,
        "state": state_name(task.status.state),
        "artifacts": texts_of_task(task),
        "history": len(task.history),
    }


# How each SDK transport turns an error answer into its exception class (a2a-sdk 1.3.0).
JSONRPC_CODES = {
    "InvalidParamsError": -32602,
    "TaskNotFoundError": -32001,
    "TaskNotCancelableError": -32002,
    "UnsupportedOperationError": -32004,
}
REST_REASONS = {
    "InvalidParamsError": "INVALID_PARAMS",
    "TaskNotFoundError": "TASK_NOT_FOUND",
    "TaskNotCancelableError": "TASK_NOT_CANCELABLE",
    "UnsupportedOperationError": "UNSUPPORTED_OPERATION",
}


def wrong_error(args: argparse.Namespace, what: str, error: Exception, expected: type) -> Mismatch:
    """The SDK raised another error than `expected`: say what the SDK needs to raise it."""
    name = expected.__name__
    if args.binding == "JSONRPC":
        needs = f"a JSON-RPC error with code {JSONRPC_CODES[name]}"
    elif args.protocol == "1.0":
        needs = (
            'an HTTP error whose body is {"error": {..., "details": [{"@type": '
            f'"type.googleapis.com/google.rpc.ErrorInfo", '
            f'"reason": "{REST_REASONS[name]}", ...}}]}}}}'
        )
    else:
        needs = f'an HTTP error whose body has "type": "{name}" (and "message")'
    return Mismatch(
        f"{what} raised {type(error).__name__}({error}), expected {name}; "
        f"the SDK's {args.protocol} {args.binding} transport raises it for {needs}"
    )


def user_message(text: str) -> Message:
    return Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]
    )


def major_minor(version: str) -> tuple[int, int] | None:
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return (v.major, v.minor)


class Wire:
    """Records every HTTP request the SDK makes and the answer's status (httpx event hooks)."""

    def __init__(self) -> None:
        self.log: list[dict] = []
        self._open: dict[int, dict] = {}

    async def on_request(self, request: httpx.Request) -> None:
        entry = {
            "method": request.method,
            "path": request.url.path,
            "a2a_version": request.headers.get("A2A-Version"),
        }
        if request.url.query:
            entry["query"] = request.url.query.decode()
        try:
            body = json.loads(request.content) if request.content else None
        except (ValueError, httpx.RequestNotRead):
            body = None
        if isinstance(body, dict) and "jsonrpc" in body:
            entry["rpc"] = body.get("method")
        self.log.append(entry)
        self._open[id(request)] = entry

    async def on_response(self, response: httpx.Response) -> None:
        entry = self._open.pop(id(response.request), None)
        if entry is None:
            return
        entry["status"] = response.status_code
        content_type = response.headers.get("content-type", "")
        entry["content_type"] = content_type
        if "text/event-stream" not in content_type:
            await response.aread()
            entry["body"] = response.text[:1500]

    def summary(self) -> list[str]:
        seen: list[str] = []
        for e in self.log:
            line = f"{e['method']} {e['path']}"
            if e.get("rpc"):
                line += f" {e['rpc']}"
            line += f" (A2A-Version: {e['a2a_version']})"
            if line not in seen:
                seen.append(line)
        return seen

    def check_versions(self, protocol: str) -> None:
        for e in self.log:
            if e["path"].endswith(CARD_PATH):
                continue
            expect(
                e["a2a_version"] == protocol,
                f"the SDK sent {e['method']} {e['path']} with A2A-Version "
                f"{e['a2a_version']!r}, not {protocol!r}: it did not pick the {protocol} "
                "interface from the card",
            )


class Session:
    """The card, narrowed to one binding and version, and SDK clients made from it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.wire = Wire()
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(args.timeout),
            event_hooks={
                "request": [self.wire.on_request],
                "response": [self.wire.on_response],
            },
        )
        self.card: AgentCard | None = None
        self.narrowed: AgentCard | None = None
        self.card_info: dict = {}
        self._clients: dict[bool, object] = {}

    async def fetch_card(self) -> dict:
        if self.card is not None:
            return self.card_info
        # The factory first, as create_client does: it sets the A2A-Version header on the
        # shared httpx client, so the card is fetched as the SDK fetches it.
        ClientFactory(self._config(streaming=False))
        self.card = await A2ACardResolver(self.http, self.args.url).get_agent_card()
        interfaces = [
            {
                "url": i.url,
                "protocolBinding": i.protocol_binding,
                "protocolVersion": i.protocol_version,
                **({"tenant": i.tenant} if i.tenant else {}),
            }
            for i in self.card.supported_interfaces
        ]
        wanted = VERSIONS[self.args.protocol]
        keep = [
            i
            for i in self.card.supported_interfaces
            if i.protocol_binding == self.args.binding
            and major_minor(i.protocol_version) == wanted
        ]
        expect(
            bool(keep),
            f"the card offers no {self.args.binding} interface with protocolVersion "
            f"{self.args.protocol}; supportedInterfaces: {json.dumps(interfaces)}",
        )
        self.narrowed = AgentCard()
        self.narrowed.CopyFrom(self.card)
        del self.narrowed.supported_interfaces[:]
        self.narrowed.supported_interfaces.extend(keep)
        self.card_info = {
            "name": self.card.name,
            "streaming": self.card.capabilities.streaming,
            "supportedInterfaces": interfaces,
            "interface": {"url": keep[0].url, "protocolVersion": keep[0].protocol_version},
        }
        return self.card_info

    def _config(self, streaming: bool) -> ClientConfig:
        return ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[self.args.binding],
            httpx_client=self.http,
        )

    async def client(self, streaming: bool = False):
        """A client that sends without streaming (streaming=False) or with it (and subscribes)."""
        await self.fetch_card()
        if streaming:
            expect(
                self.card.capabilities.streaming,
                "the card does not declare capabilities.streaming, so the SDK will neither "
                "stream nor subscribe",
            )
        if streaming not in self._clients:
            factory = ClientFactory(self._config(streaming))
            self._clients[streaming] = factory.create(self.narrowed)
        return self._clients[streaming]

    async def close(self) -> None:
        for c in self._clients.values():
            await c.close()
        await self.http.aclose()


async def send_one(client, text: str, return_immediately: bool = False):
    """A non-streaming send: the SDK yields exactly one StreamResponse (task or message)."""
    request = SendMessageRequest(message=user_message(text))
    if return_immediately:
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
    answers = [a async for a in client.send_message(request)]
    expect(len(answers) == 1, f"a non-streaming send yielded {len(answers)} answers")
    answer = answers[0]
    kind = answer.WhichOneof("payload")
    expect(kind == "task", f"send of {text!r} answered a {kind}, not a Task: {answer}")
    return answer.task


async def poll_until(client, task_id: str, states: set[int], timeout: float):
    deadline = time.monotonic() + timeout
    polls = 0
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        polls += 1
        if task.status.state in states:
            return task, polls
        if time.monotonic() > deadline:
            raise Mismatch(
                f"task {task_id} still {state_name(task.status.state)} after {timeout}s of polling"
            )
        await asyncio.sleep(0.05)


def expect_completed_with(task, text: str, what: str) -> None:
    expect(
        task.status.state == TaskState.TASK_STATE_COMPLETED,
        f"{what}: state {state_name(task.status.state)}, expected completed: "
        f"{describe_task(task)}",
    )
    expect(
        text in texts_of_task(task),
        f"{what}: no artifact with text {text!r}: artifacts {texts_of_task(task)}",
    )


async def scenario_basic(s: Session, out: dict) -> None:
    client = await s.client()

    task = await send_one(client, "hello")
    out["send"] = describe_task(task)
    expect_completed_with(task, "hello", "blocking send of 'hello'")

    got = await client.get_task(GetTaskRequest(id=task.id))
    out["get"] = describe_task(got)
    expect(got.id == task.id, f"get {task.id} answered task {got.id}")
    expect_completed_with(got, "hello", "get after the blocking send")
    out["get"]["history_texts"] = [get_message_text(m) for m in got.history]

    short = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
    out["get_history_length_1"] = len(short.history)
    expect(
        len(short.history) <= 1,
        f"get with history_length 1 answered {len(short.history)} history messages",
    )
    expect(
        short.status.state == TaskState.TASK_STATE_COMPLETED,
        f"get with history_length 1: state {state_name(short.status.state)}, expected completed",
    )

    if s.args.protocol == "1.0":
        found = None
        pages = 0
        request = ListTasksRequest(context_id=task.context_id, page_size=50)
        while True:
            page = await client.list_tasks(request)
            pages += 1
            found = found or next((t for t in page.tasks if t.id == task.id), None)
            if found or not page.next_page_token or pages >= 20:
                break
            request.page_token = page.next_page_token
        expect(
            found is not None,
            f"list_tasks(context_id={task.context_id}) did not list {task.id}",
        )
        expect(
            found.status.state == TaskState.TASK_STATE_COMPLETED,
            f"list_tasks lists {task.id} as {state_name(found.status.state)}",
        )
        out["list"] = {"found": True, "pages": pages, "state": state_name(found.status.state)}
    else:
        try:
            await client.list_tasks(ListTasksRequest(context_id=task.context_id))
        except NotImplementedError as e:
            out["list"] = {
                "skipped": f"the SDK's 0.3 transport does not implement ListTasks ({e})"
            }
        else:
            raise Mismatch("the SDK's 0.3 transport listed tasks; expected NotImplementedError")

    later = await send_one(client, "hello again", return_immediately=True)
    out["send_return_immediately"] = describe_task(later)
    done, polls = await poll_until(client, later.id, TERMINAL, s.args.timeout)
    expect_completed_with(done, "hello again", "polled task sent with return_immediately")
    out["polled"] = {**describe_task(done), "polls": polls}


async def send_slow(client, text: str, slow_text: str | None = None):
    """A send with return_immediately to a slow agent: of `text`, or of --slow-text when given
    (an agent that cannot be told to be slow is made slow by what it is sent)."""
    task = await send_one(client, slow_text or text, return_immediately=True)
    expect(
        task.status.state not in TERMINAL,
        f"send with return_immediately answered a task already {state_name(task.status.state)}: "
        "the server's agent must be slow for this scenario "
        "(e.g. tnstore serve --echo-delay-ms 60000)",
    )
    return task


async def scenario_cancel(s: Session, out: dict) -> None:
    client = await s.client()
    task = await send_slow(client, "cancel me", s.args.slow_text)
    out["send"] = describe_task(task)

    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    out["cancel"] = describe_task(canceled)
    expect(canceled.id == task.id, f"cancel {task.id} answered task {canceled.id}")
    expect(
        canceled.status.state == TaskState.TASK_STATE_CANCELED,
        f"cancel answered state {state_name(canceled.status.state)}, expected canceled",
    )
    got = await client.get_task(GetTaskRequest(id=task.id))
    out["get"] = describe_task(got)
    expect(
        got.status.state == TaskState.TASK_STATE_CANCELED,
        f"get after cancel: state {state_name(got.status.state)}, expected canceled",
    )
    try:
        again = await client.cancel_task(CancelTaskRequest(id=task.id))
    except TaskNotCancelableError as e:
        out["cancel_again"] = f"TaskNotCancelableError: {e.message}"
    except A2AError as e:
        raise wrong_error(s.args, "cancel of a canceled task", e, TaskNotCancelableError) from e
    else:
        raise Mismatch(
            f"cancel of a canceled task answered {describe_task(again)}, "
            "expected TaskNotCancelableError"
        )


def describe_event(event) -> str:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task:{state_name(event.task.status.state)}"
    if kind == "status_update":
        return f"status:{state_name(event.status_update.status.state)}"
    if kind == "artifact_update":
        return f"artifact:{get_artifact_text(event.artifact_update.artifact, delimiter='')}"
    if kind == "message":
        return f"message:{get_message_text(event.message)}"
    return f"{kind}"


async def scenario_stream(s: Session, out: dict) -> None:
    client = await s.client(streaming=True)
    request = SendMessageRequest(message=user_message("hello stream"))

    async def collect():
        return [e async for e in client.send_message(request)]

    try:
        events = await asyncio.wait_for(collect(), s.args.timeout)
    except asyncio.TimeoutError:
        raise Mismatch(f"the stream did not end within {s.args.timeout}s") from None
    out["events"] = [describe_event(e) for e in events]
    expect(bool(events), "the stream carried no event")

    task_id = None
    state = None
    artifacts: dict[str, str] = {}
    for e in events:
        kind = e.WhichOneof("payload")
        expect(kind != "message", f"the stream carried a Message, not Task events: {e}")
        if kind == "task":
            this_id, state = e.task.id, e.task.status.state
            for a in e.task.artifacts:
                artifacts[a.artifact_id] = get_artifact_text(a, delimiter="")
        elif kind == "status_update":
            this_id, state = e.status_update.task_id, e.status_update.status.state
        elif kind == "artifact_update":
            u = e.artifact_update
            this_id = u.task_id
            text = get_artifact_text(u.artifact, delimiter="")
            artifacts[u.artifact.artifact_id] = (
                artifacts.get(u.artifact.artifact_id, "") + text if u.append else text
            )
        task_id = task_id or this_id
        expect(this_id == task_id, f"the stream mixes tasks {task_id} and {this_id}")
    expect(
        state == TaskState.TASK_STATE_COMPLETED,
        f"the stream ended in state {state_name(state) if state is not None else 'none'}, "
        f"expected completed: {out['events']}",
    )
    expect(
        "hello stream" in artifacts.values(),
        f"no artifact with text 'hello stream' in the stream: {out['events']}",
    )
    out["task_id"] = task_id
    got = await (await s.client()).get_task(GetTaskRequest(id=task_id))
    expect_completed_with(got, "hello stream", "get after the stream")
    out["get"] = describe_task(got)


async def first_event(stream, timeout: float):
    try:
        return await asyncio.wait_for(anext(stream), timeout)
    except StopAsyncIteration:
        return None
    except asyncio.TimeoutError:
        raise Mismatch(f"no event within {timeout}s of subscribing") from None


async def scenario_subscribe_start(s: Session, out: dict) -> None:
    sender = await s.client()
    subscriber = await s.client(streaming=True)
    task = await send_slow(sender, "subscribe to me", s.args.slow_text)
    out["task_id"] = task.id
    out["send"] = describe_task(task)

    stream = subscriber.subscribe(SubscribeToTaskRequest(id=task.id))
    try:
        event = await first_event(stream, s.args.timeout)
    finally:
        try:
            await stream.aclose()
        except RuntimeError:
            pass
    expect(event is not None, "the subscription ended without an event")
    out["first_event"] = describe_event(event)
    kind = event.WhichOneof("payload")
    expect(
        kind in ("task", "status_update"),
        f"the first event of the subscription is a {kind}, expected the Task (or a status update)",
    )
    if kind == "task":
        event_id, state = event.task.id, event.task.status.state
    else:
        event_id, state = event.status_update.task_id, event.status_update.status.state
    expect(event_id == task.id, f"subscribed to {task.id}, got an event of {event_id}")
    expect(
        state not in TERMINAL,
        f"the first event says {state_name(state)}: the agent must still be working "
        "(slow echo) when the server is killed",
    )


async def scenario_subscribe_after_restart(s: Session, out: dict) -> None:
    task_id = s.args.task_id
    subscriber = await s.client(streaming=True)
    out["task_id"] = task_id

    async def collect(stream):
        return [e async for e in stream]

    try:
        events = await asyncio.wait_for(
            collect(subscriber.subscribe(SubscribeToTaskRequest(id=task_id))), s.args.timeout
        )
    except UnsupportedOperationError as e:
        out["subscribe"] = f"UnsupportedOperationError: {e.message}"
    except A2AError as e:
        raise wrong_error(
            s.args, "subscribing to a failed task", e, UnsupportedOperationError
        ) from e
    except asyncio.TimeoutError:
        raise Mismatch(
            f"subscribing to the terminal task {task_id} neither failed with "
            f"UnsupportedOperationError nor ended within {s.args.timeout}s"
        ) from None
    else:
        out["subscribe"] = [describe_event(e) for e in events]
        expect(bool(events), "the subscription to a terminal task ended without an event")
        last = events[-1]
        kind = last.WhichOneof("payload")
        state = (
            last.task.status.state
            if kind == "task"
            else last.status_update.status.state
            if kind == "status_update"
            else None
        )
        expect(
            state == TaskState.TASK_STATE_FAILED,
            f"subscribing after the restart: expected UnsupportedOperationError or the Task "
            f"failed, got {out['subscribe']}",
        )
    got = await (await s.client()).get_task(GetTaskRequest(id=task_id))
    out["get"] = describe_task(got)
    if got.status.HasField("message"):
        out["get"]["status_message"] = get_message_text(got.status.message)
    expect(
        got.status.state == TaskState.TASK_STATE_FAILED,
        f"get after the restart: state {state_name(got.status.state)}, expected failed",
    )


def event_key(event) -> str:
    """What an event says, exactly: `task:STATE`, `status:STATE:message text`,
    `artifact:ID:[+]text[!]` (+ an append, ! the last chunk), `message:text`."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task:{state_name(event.task.status.state)}"
    if kind == "status_update":
        status = event.status_update.status
        text = get_message_text(status.message) if status.HasField("message") else ""
        return f"status:{state_name(status.state)}:{text}"
    if kind == "artifact_update":
        u = event.artifact_update
        plus = "+" if u.append else ""
        last = "!" if u.last_chunk else ""
        return f"artifact:{u.artifact.artifact_id}:{plus}{get_artifact_text(u.artifact, delimiter='')}{last}"
    if kind == "message":
        return f"message:{get_message_text(event.message)}"
    return str(kind)


def events_expected(task_id: str, rounds: int) -> list[str]:
    """The events of `events:ROUNDS:…` after the Task and `working`, as `event_key` says them."""
    out = []
    for i in range(rounds):
        out.append(f"status:{state_name(TaskState.TASK_STATE_WORKING)}:step {i}")
        plus = "+" if i > 0 else ""
        last = "!" if i + 1 == rounds else ""
        out.append(f"artifact:{task_id}-events:{plus}{i}{last}")
    out.append(f"status:{state_name(TaskState.TASK_STATE_COMPLETED)}:done")
    return out


EVENTS_ROUNDS = 12


async def scenario_events(s: Session, out: dict) -> None:
    sender = await s.client(streaming=True)
    subscriber = await s.client(streaming=True)
    sent = sender.send_message(
        SendMessageRequest(message=user_message(f"events:{EVENTS_ROUNDS}:40"))
    )
    first = await first_event(sent, s.args.timeout)
    expect(first is not None and first.WhichOneof("payload") == "task",
           f"the stream's first event is not the Task: {first}")
    task_id = first.task.id
    out["task_id"] = task_id
    subscription = subscriber.subscribe(SubscribeToTaskRequest(id=task_id))

    async def rest(stream):
        return [e async for e in stream]

    try:
        sent_rest, subscribed = await asyncio.wait_for(
            asyncio.gather(rest(sent), rest(subscription)), s.args.timeout
        )
    except asyncio.TimeoutError:
        raise Mismatch(f"the streams did not end within {s.args.timeout}s") from None
    a = [event_key(first)] + [event_key(e) for e in sent_rest]
    b = [event_key(e) for e in subscribed]
    out["send"], out["subscribe"] = a, b
    working = f"status:{state_name(TaskState.TASK_STATE_WORKING)}:"
    want = [f"task:{state_name(TaskState.TASK_STATE_SUBMITTED)}", working]
    want += events_expected(task_id, EVENTS_ROUNDS)
    expect(a == want, f"the send's stream is not exactly the agent's events:\n got {a}\nwant {want}")
    expect(bool(b) and subscribed[0].WhichOneof("payload") == "task",
           f"the subscription does not start with the Task: {b}")
    if s.args.store_subscriptions:
        check_store_subscription(task_id, subscribed, want)
        return
    tail = b[1:]
    expect(0 < len(tail) <= len(want) - 1 and want[len(want) - len(tail):] == tail,
           f"the subscription's events are not the send's from some point on:\n sub {b}\nsend {a}")
    # The Task it started with holds exactly the pieces of the events before that point.
    before = want[: len(want) - len(tail)]
    pieces = "".join(k.split(":", 2)[2].lstrip("+").rstrip("!") for k in before if k.startswith("artifact:"))
    snapshot = subscribed[0].task
    got = "".join(get_artifact_text(x, delimiter="") for x in snapshot.artifacts
                  if x.artifact_id == f"{task_id}-events")
    expect(got == pieces, f"the subscription's Task holds {got!r}, the events before it {pieces!r}")


def check_store_subscription(task_id: str, subscribed: list, want: list[str]) -> None:
    """--store-subscriptions: the subscription reads the store (it never shares the run's live
    events, as on a host that answers each request in a fresh instance), where saves that land
    between two reads arrive as one change. It must still start with the Task, end with the
    send's last event, and its Task plus its artifact updates must make the whole artifact."""
    b = [event_key(e) for e in subscribed]
    expect(b[-1] == want[-1], f"the subscription does not end as the send did:\n sub {b}\nsend {want}")
    pieces = "".join(get_artifact_text(x, delimiter="") for x in subscribed[0].task.artifacts
                     if x.artifact_id == f"{task_id}-events")
    for event in subscribed[1:]:
        if event.WhichOneof("payload") != "artifact_update":
            continue
        update = event.artifact_update
        if update.artifact.artifact_id != f"{task_id}-events":
            continue
        text = get_artifact_text(update.artifact, delimiter="")
        pieces = pieces + text if update.append else text
    whole = "".join(str(i) for i in range(EVENTS_ROUNDS))
    expect(pieces == whole, f"the subscription's Task and updates make {pieces!r}, not {whole!r}: {b}")


async def scenario_events_start(s: Session, out: dict) -> None:
    client = await s.client(streaming=True)
    stream = client.send_message(SendMessageRequest(message=user_message("events:40:500")))
    seen = []
    task_id = None
    try:
        while len(seen) < 6:
            event = await first_event(stream, s.args.timeout)
            expect(event is not None, f"the stream ended after {seen}")
            if event.WhichOneof("payload") == "task":
                task_id = event.task.id
            seen.append(event_key(event))
    finally:
        try:
            await stream.aclose()
        except RuntimeError:
            pass
    out["task_id"] = task_id
    out["seen"] = seen


async def scenario_events_after_restart(s: Session, out: dict) -> None:
    task_id = s.args.task_id
    seen = json.loads(s.args.seen)
    client = await s.client()
    got = await client.get_task(GetTaskRequest(id=task_id))
    out["get"] = describe_task(got)
    expect(got.status.state == TaskState.TASK_STATE_FAILED,
           f"get after the restart: state {state_name(got.status.state)}, expected failed")
    pieces = "".join(k.split(":", 2)[2].lstrip("+").rstrip("!") for k in seen if k.startswith("artifact:"))
    stored = "".join(get_artifact_text(x, delimiter="") for x in got.artifacts
                     if x.artifact_id == f"{task_id}-events")
    expect(stored.startswith(pieces) and pieces,
           f"the Task holds {stored!r}; the stream had shown {pieces!r} before the crash")
    said = [k.split(":", 2)[2] for k in seen if k.startswith("status:") and k.split(":", 2)[2]]
    history = [get_message_text(m) for m in got.history]
    it = iter(history)
    expect(all(any(h == m for h in it) for m in said),
           f"the status messages seen {said} are not all in the history {history}, in order")
    streaming = await s.client(streaming=True)
    try:
        events = [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=task_id))]
    except UnsupportedOperationError as e:
        out["subscribe"] = f"UnsupportedOperationError: {e.message}"
    else:
        raise Mismatch(f"subscribing to the failed Task gave events: {[event_key(e) for e in events]}")


async def scenario_not_found(s: Session, out: dict) -> None:
    client = await s.client()
    missing = f"no-such-task-{uuid.uuid4()}"
    try:
        task = await client.get_task(GetTaskRequest(id=missing))
    except TaskNotFoundError as e:
        out["get"] = f"TaskNotFoundError: {e.message}"
        return
    except A2AError as e:
        raise wrong_error(s.args, "get of an unknown id", e, TaskNotFoundError) from e
    raise Mismatch(f"get of unknown id answered {describe_task(task)}, expected TaskNotFoundError")


def describe_config(config) -> dict:
    return {
        "task_id": config.task_id,
        "id": config.id,
        "url": config.url,
        "token": config.token,
        "authentication": {
            "scheme": config.authentication.scheme,
            "credentials": config.authentication.credentials,
        }
        if config.HasField("authentication")
        else None,
    }


async def expect_error(s: Session, what: str, call, expected: type) -> str:
    """Awaits `call()`, which must raise `expected`; its message."""
    try:
        answer = await call()
    except expected as e:
        return f"{expected.__name__}: {e.message}"
    except A2AError as e:
        raise wrong_error(s.args, what, e, expected) from e
    raise Mismatch(f"{what} answered {answer}, expected {expected.__name__}")


async def scenario_push_configs(s: Session, out: dict) -> None:
    await s.fetch_card()
    expect(
        s.card.capabilities.push_notifications,
        "the card does not declare capabilities.pushNotifications: the server offers no push "
        "notifications (is a sender wired, and does the store keep push configs?)",
    )
    client = await s.client()
    task = await send_one(client, "hello push")
    tag = f"{s.args.protocol}-{s.args.binding}".replace("+", "-").lower()
    hook = f"https://push.example.invalid/{tag}"

    first = TaskPushNotificationConfig(
        task_id=task.id,
        id="first",
        url=hook,
        token="token-1",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret-1"),
    )
    wanted = describe_config(first)
    created = await client.create_task_push_notification_config(first)
    out["create"] = describe_config(created)
    expect(out["create"] == wanted, f"create answered {out['create']}, expected {wanted}")

    got = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id="first")
    )
    out["get"] = describe_config(got)
    expect(out["get"] == wanted, f"get answered {out['get']}, expected {wanted}")

    second = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task.id, url=f"{hook}/second")
    )
    out["create_without_id"] = describe_config(second)
    expect(bool(second.id), f"a config created without an id got none: {out['create_without_id']}")
    expect(
        second.url == f"{hook}/second" and second.task_id == task.id,
        f"create without an id answered {out['create_without_id']}",
    )

    try:
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
    except NotImplementedError as e:
        out["list"] = {"skipped": f"the SDK's transport does not implement it ({e})"}
    else:
        ids = [c.id for c in listed.configs]
        out["list"] = ids
        expected_ids = sorted(["first", second.id])
        expect(ids == expected_ids, f"list answered configs {ids}, expected {expected_ids}")
        listed_first = next(c for c in listed.configs if c.id == "first")
        expect(
            describe_config(listed_first) == wanted,
            f"list answered {describe_config(listed_first)} for the first config",
        )

    try:
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="first")
        )
    except NotImplementedError as e:
        out["delete"] = {"skipped": f"the SDK's transport does not implement it ({e})"}
    else:
        out["delete"] = "deleted"
        out["get_deleted"] = await expect_error(
            s,
            "get of a deleted config",
            lambda: client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="first")
            ),
            TaskNotFoundError,
        )

    missing = f"no-such-task-{uuid.uuid4()}"
    out["create_unknown_task"] = await expect_error(
        s,
        "create on an unknown task",
        lambda: client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=missing, url=hook)
        ),
        TaskNotFoundError,
    )
    out["get_unknown_task"] = await expect_error(
        s,
        "get on an unknown task",
        lambda: client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=missing, id="first")
        ),
        TaskNotFoundError,
    )
    out["refused_url"] = await expect_error(
        s,
        "create with a loopback webhook URL",
        lambda: client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1:9/hook")
        ),
        InvalidParamsError,
    )

    request = SendMessageRequest(message=user_message("hello push config"))
    request.configuration.CopyFrom(
        SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(
                id="on-send", url=f"{hook}/on-send", token="token-2"
            )
        )
    )
    answers = [a async for a in client.send_message(request)]
    expect(len(answers) == 1, f"a non-streaming send yielded {len(answers)} answers")
    expect(answers[0].WhichOneof("payload") == "task", f"the send answered {answers[0]}")
    sent = answers[0].task
    on_send = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=sent.id, id="on-send")
    )
    out["send_with_config"] = describe_config(on_send)
    expect(
        on_send.url == f"{hook}/on-send" and on_send.token == "token-2",
        f"the config sent with the message reads back as {out['send_with_config']}",
    )


RUN = {
    "basic": scenario_basic,
    "cancel": scenario_cancel,
    "stream": scenario_stream,
    "subscribe-start": scenario_subscribe_start,
    "subscribe-after-restart": scenario_subscribe_after_restart,
    "not-found": scenario_not_found,
    "events": scenario_events,
    "events-start": scenario_events_start,
    "events-after-restart": scenario_events_after_restart,
    "push-configs": scenario_push_configs,
}


async def run(args: argparse.Namespace) -> int:
    session = Session(args)
    report: dict = {
        "ok": False,
        "url": args.url,
        "protocol": args.protocol,
        "binding": args.binding,
        "results": {},
    }
    failure = None
    current = "card"
    try:
        report["card"] = await session.fetch_card()
        for name in args.scenarios:
            current = name
            report["results"][name] = {}
            await RUN[name](session, report["results"][name])
        current = "request versions"
        session.wire.check_versions(args.protocol)
        report["ok"] = True
    except Mismatch as e:
        failure = str(e)
    except Exception as e:  # anything the SDK raised that the scenario did not expect
        failure = f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc()}"
    finally:
        try:
            await session.close()
        except Exception:
            pass
    report["requests"] = session.wire.summary()
    print(json.dumps(report), flush=True)
    if failure is None:
        return 0
    print(
        f"sdk_client.py: FAILED (A2A {args.protocol}, {args.binding}, scenario {current}) "
        f"against {args.url}: {failure}",
        file=sys.stderr,
    )
    print("requests so far (newest last):", file=sys.stderr)
    for e in session.wire.log[-12:]:
        print("  " + json.dumps(e), file=sys.stderr)
    sys.stderr.flush()
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the agent's base URL, e.g. http://127.0.0.1:8080/")
    parser.add_argument("--protocol", required=True, choices=sorted(VERSIONS))
    parser.add_argument("--binding", required=True, choices=["JSONRPC", "HTTP+JSON"])
    parser.add_argument(
        "--scenario",
        required=True,
        help="one or more of " + ", ".join(SCENARIOS) + ", comma-separated",
    )
    parser.add_argument("--task-id", help="the Task of subscribe-after-restart, events-after-restart")
    parser.add_argument("--seen", help="events-after-restart: the `seen` of events-start (JSON)")
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds per wait (default 30)"
    )
    parser.add_argument(
        "--slow-text",
        help="cancel, subscribe-start: send this text instead, to an agent that is slow for it "
        "(the composed component's agents take no settings: `events:600:100` to its tck agent)",
    )
    parser.add_argument(
        "--store-subscriptions",
        action="store_true",
        help="events: the server's subscriptions read the store, never a run's live events (a "
        "wasi:http component answers each request in a fresh instance); saves between two "
        "reads arrive as one change, so only the subscription's start, end and artifact are checked",
    )
    args = parser.parse_args()
    args.scenarios = [n.strip() for n in args.scenario.split(",") if n.strip()]
    unknown = [n for n in args.scenarios if n not in RUN]
    if unknown or not args.scenarios:
        parser.error(f"unknown scenario {unknown}; choose from {', '.join(SCENARIOS)}")
    if "subscribe-after-restart" in args.scenarios and not args.task_id:
        parser.error("subscribe-after-restart needs --task-id")
    if "events-after-restart" in args.scenarios and not (args.task_id and args.seen):
        parser.error("events-after-restart needs --task-id and --seen")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
