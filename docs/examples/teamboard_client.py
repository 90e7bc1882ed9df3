#!/usr/bin/env python3
"""A minimal, dependency-free Python client for boardd (see docs/protocol.md).

Use it as a module:

    from teamboard_client import Client, ServerError

    with Client.connect(name="alice", team="default") as c:
        member = c.call("register", {"role": "dev"})
        alices_own = member["credential"]  # vouches for alice from now on
        work = c.call("wait_for_work", {"timeout_ms": 30000})

A session presents a credential in its hello: the lead's, read from boardd's
`lead.key` (see lead_key_path(); the default when none is given), or the one
`register` gave a member. Without one, on the socket every request is refused
with `permission_denied`; over the network the hello itself is refused
(`Rejected`).

Over the network, `path` is boardd's TLS listener (`boardd --listen-tcp`), and
the credential a token from `teamctl token create NAME`:

    c = Client.connect("tls://board.example:7433", name="alice",
                       credential=open("alice.token").read().strip(),
                       cafile="ca.pem")

`cafile` is the CA (PEM) the server's certificate must be signed by (a
self-signed certificate is its own CA); without it the system's roots. The
certificate is always checked, and its name must match the host.

or run it as a self-check against a running boardd:

    python3 teamboard_client.py /path/to/boardd.sock [/path/to/lead.key]
    python3 teamboard_client.py tls://127.0.0.1:7433 /path/to/lead.key ca.pem

which drives a full scenario, prints "ok" and exits 0, or prints what went wrong
and exits 1.

One Client is one connection and one session. It is not thread-safe: use one
Client per thread (or add a lock around call/next_event).
"""

import collections
import json
import os
import socket
import ssl
import struct
import sys
import time

PROTOCOL_VERSION = 1
MAX_FRAME_LEN = 1024 * 1024  # bytes of JSON payload a client may send
MAX_RESPONSE_LEN = 64 * 1024 * 1024  # bytes of JSON payload boardd may send
DEFAULT_TEAM = "default"


class TeamboardError(Exception):
    """Base class of everything this module raises about boardd."""


class ServerError(TeamboardError):
    """boardd answered a request with an error ({code, message}).

    The connection is still usable.
    """

    def __init__(self, code, message):
        super().__init__("%s (%s)" % (message, code))
        self.code = code
        self.message = message


class ConnectionClosed(TeamboardError):
    """The connection ended. `error` is the server's connection-level error
    object ({code, message}) when it sent one before closing, else None."""

    def __init__(self, why, error=None):
        super().__init__(why)
        self.error = error
        self.code = error.get("code") if error else None


class Rejected(TeamboardError):
    """boardd refused the handshake (`reject` frame); `reason` says what to do."""

    def __init__(self, reason):
        super().__init__("boardd refused the connection: %s" % reason)
        self.reason = reason


def default_socket_path():
    """The socket path boardd listens on by default, resolved as boardd does."""
    env = os.environ.get
    if env("TEAMBOARD_SOCKET"):
        return env("TEAMBOARD_SOCKET")
    if env("XDG_RUNTIME_DIR"):
        return os.path.join(env("XDG_RUNTIME_DIR"), "teamboard", "boardd.sock")
    return os.path.join(default_state_dir(), "boardd.sock")


def default_state_dir():
    env = os.environ.get
    if env("TEAMBOARD_STATE_DIR"):
        return env("TEAMBOARD_STATE_DIR")
    if env("STATE_DIRECTORY"):
        return env("STATE_DIRECTORY").split(":")[0]
    xdg_state = env("XDG_STATE_HOME")
    if xdg_state and os.path.isabs(xdg_state):
        return os.path.join(xdg_state, "teamboard")
    return os.path.join(os.path.expanduser("~"), ".local", "state", "teamboard")


def lead_key_path(state_dir=None):
    """Where boardd keeps the lead's credential: $TEAMBOARD_LEAD_KEY, else
    lead.key in the state directory."""
    if os.environ.get("TEAMBOARD_LEAD_KEY"):
        return os.environ["TEAMBOARD_LEAD_KEY"]
    return os.path.join(state_dir or default_state_dir(), "lead.key")


def read_lead_key(path=None):
    """The lead's credential: the text of the key file, without its newline.
    Only the user that runs boardd can read it."""
    path = path or lead_key_path()
    try:
        with open(path, encoding="utf-8") as f:
            key = f.read().strip()
    except OSError as e:
        raise TeamboardError(
            "cannot read the lead's credential at %s: %s; run as the user that runs "
            "boardd, or point TEAMBOARD_LEAD_KEY at it" % (path, e)
        ) from e
    if not key:
        raise TeamboardError("the lead's credential at %s is empty" % path)
    return key


def open_stream(path=None, timeout=10.0, cafile=None):
    """A connected socket: the Unix socket at `path`, or for `tls://HOST:PORT`
    a TLS connection whose certificate is checked against `cafile` (or the
    system's roots) and HOST. The frames are the same either way."""
    path = path or default_socket_path()
    if path.startswith("tls://"):
        host, _, port = path[len("tls://"):].rstrip("/").rpartition(":")
        host = host.strip("[]")
        context = ssl.create_default_context(cafile=cafile)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            raw = socket.create_connection((host, int(port)), timeout=timeout)
        except OSError as e:
            raise TeamboardError("cannot reach boardd at %s: %s" % (path, e)) from e
        try:
            return context.wrap_socket(raw, server_hostname=host)
        except ssl.SSLError as e:
            raw.close()
            raise TeamboardError(
                "TLS with boardd at %s failed (%s); its certificate must be for %s and "
                "signed by %s" % (path, e, host, cafile or "a root the system trusts")
            ) from e
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        sock.close()
        raise TeamboardError(
            "boardd is not running (nothing listens on %s): %s" % (path, e)
        ) from e
    return sock


def encode_frame(obj):
    """One frame: 4-byte big-endian length, then that many bytes of UTF-8 JSON."""
    payload = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(payload) > MAX_FRAME_LEN:
        raise ValueError("frame of %d bytes exceeds the %d byte limit" % (len(payload), MAX_FRAME_LEN))
    return struct.pack(">I", len(payload)) + payload


class Client:
    """One connection to boardd, after a successful hello."""

    def __init__(self, sock, welcome):
        self._sock = sock
        # {"type": "welcome", "protocol", "server", "session", "lease_ttl_ms"};
        # a claim holder heartbeats every welcome["lease_ttl_ms"] / 3 ms.
        self.welcome = welcome
        self._next_id = 1
        self._events = collections.deque()  # pushed events not yet read
        self._responses = {}  # responses that arrived for other ids
        self._buf = b""
        self.closed = None  # a ConnectionClosed once the connection has ended

    @classmethod
    def connect(
        cls,
        path=None,
        name="lead",
        team=DEFAULT_TEAM,
        client="python",
        timeout=10.0,
        credential=None,
        cafile=None,
    ):
        """Connects to `path` (default: default_socket_path(); `tls://HOST:PORT`
        for boardd's TLS listener, trusting `cafile`) and says hello as `name`,
        presenting `credential`: by default the lead's (read_lead_key()), which
        vouches for any name; a member may present its own, or a token."""
        if credential is None:
            credential = read_lead_key()
        sock = open_stream(path, timeout, cafile)
        hello = {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "client": client,
            "name": name,
            "team": team,
            "credential": credential,
        }
        sock.sendall(encode_frame(hello))
        c = cls(sock, None)
        frame = c._read_frame()
        kind = frame.get("type")
        if kind == "welcome":
            c.welcome = frame
            return c
        sock.close()
        if kind == "reject":
            raise Rejected(frame.get("reason", ""))
        if kind == "error":
            err = frame.get("error") or {}
            raise ConnectionClosed("handshake failed: %s" % err.get("message"), err)
        raise TeamboardError("expected welcome, got %r" % frame)

    # -- framing ---------------------------------------------------------------

    def _fill(self, n, deadline):
        """Reads until at least n bytes are buffered. Nothing is consumed, so a
        timeout never loses part of a frame."""
        while len(self._buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no frame from boardd in time")
                self._sock.settimeout(left)
            else:
                self._sock.settimeout(None)
            try:
                chunk = self._sock.recv(65536)
            except socket.timeout:
                raise TimeoutError("no frame from boardd in time") from None
            except OSError as e:
                raise self._closed("connection error: %s" % e)
            if not chunk:
                raise self._closed("boardd closed the connection")
            self._buf += chunk

    def _closed(self, why, error=None):
        if self.closed is None:
            self.closed = ConnectionClosed(why, error)
        return self.closed

    def _read_frame(self, timeout=None):
        """Reads one frame and returns the decoded JSON object."""
        if self.closed is not None:
            raise self.closed
        deadline = None if timeout is None else time.monotonic() + timeout
        self._fill(4, deadline)
        (length,) = struct.unpack(">I", self._buf[:4])
        if length > MAX_RESPONSE_LEN:
            raise self._closed("boardd sent a frame of %d bytes" % length)
        self._fill(4 + length, deadline)
        payload, self._buf = self._buf[4 : 4 + length], self._buf[4 + length :]
        return json.loads(payload.decode("utf-8"))

    def send_raw(self, data):
        """Writes raw bytes (for tests of malformed input)."""
        self._sock.sendall(data)

    def _dispatch(self, frame):
        """Files one frame read from the server. Returns it if it is a response."""
        kind = frame.get("type")
        if kind == "response":
            return frame
        if kind == "event":
            self._events.append(frame["event"])
        elif kind == "error":
            err = frame.get("error") or {}
            raise self._closed("boardd closed the connection: %s" % err.get("message"), err)
        # Unknown frame types are ignored, for forward compatibility.
        return None

    # -- requests --------------------------------------------------------------

    def send_request(self, op, args=None):
        """Sends a request without waiting; returns its id. Use wait_response(id)."""
        rid = self._next_id
        self._next_id += 1
        frame = {"type": "request", "id": rid, "op": op}
        if args is not None:
            frame["args"] = args
        try:
            self._sock.sendall(encode_frame(frame))
        except OSError as e:
            raise self._closed("cannot send: %s" % e)
        return rid

    def wait_response(self, rid, timeout=None):
        """Waits for the response to request `rid`. Returns its result or raises
        ServerError. Events that arrive meanwhile are queued for next_event()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while rid not in self._responses:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            frame = self._dispatch(self._read_frame(left))
            if frame is not None:
                self._responses[frame.get("id")] = frame
        frame = self._responses.pop(rid)
        if frame.get("error") is not None:
            err = frame["error"]
            raise ServerError(err.get("code"), err.get("message", ""))
        return frame.get("result")  # absent only for null results of old servers

    def call(self, op, args=None, timeout=None):
        """Sends one request and returns its result (decoded JSON), or raises
        ServerError with the error's code and message."""
        return self.wait_response(self.send_request(op, args), timeout)

    # -- events ----------------------------------------------------------------

    def next_event(self, timeout=None):
        """The next pushed event (after `subscribe`), or None if `timeout`
        seconds pass without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._events:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            try:
                frame = self._dispatch(self._read_frame(left))
            except TimeoutError:
                return None
            if frame is not None:
                self._responses[frame.get("id")] = frame
        return self._events.popleft()

    def close(self):
        try:
            self._sock.close()
        finally:
            self._closed("closed by the client")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- self-check ------------------------------------------------------------------


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


def expect_error(code, fn, *args, **kwargs):
    try:
        got = fn(*args, **kwargs)
    except ServerError as e:
        expect(e.code == code, "expected error %r, got %r (%s)" % (code, e.code, e.message))
        return e
    raise Mismatch("expected error %r, got result %r" % (code, got))


def expect_refused(path, name, team, credential, cafile, op):
    """A session `credential` does not vouch for `name`: over the network its
    hello is refused; on the socket it is welcomed and `op` is refused. The
    reason, in words."""
    try:
        c = Client.connect(path, name=name, team=team, client="pydemo", credential=credential, cafile=cafile)
    except Rejected as e:
        expect(path.startswith(("tls://", "tcp://")), "refused on the socket: %s" % e)
        return e.reason
    try:
        expect(not path.startswith(("tls://", "tcp://")), "welcomed over the network")
        return expect_error("permission_denied", c.call, op).message
    finally:
        c.close()


def wait_event(client, pred, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ev = client.next_event(timeout=max(left, 0))
        if ev is None:
            raise Mismatch("no %s event within %.0f s" % (what, timeout))
        if pred(ev):
            return ev


def demo(path, cafile=None):
    team = "pydemo-%d" % os.getpid()

    # Handshake: a wrong major version is rejected with a reason.
    try:
        s = open_stream(path, 10, cafile)
        s.sendall(encode_frame({"type": "hello", "protocol": 999, "client": "demo", "name": "lead"}))
        c = Client(s, None)
        frame = c._read_frame(timeout=10)
        expect(frame.get("type") == "reject", "expected reject, got %r" % frame)
        expect("version" in frame.get("reason", ""), "reject reason: %r" % frame)
        s.close()
    except ConnectionClosed as e:
        raise Mismatch("version mismatch closed without reject: %s" % e)

    lead = Client.connect(path, name="lead", team=team, client="pydemo", cafile=cafile)
    expect(lead.welcome["protocol"] == PROTOCOL_VERSION, "welcome: %r" % lead.welcome)
    expect(isinstance(lead.welcome["session"], int), "welcome: %r" % lead.welcome)

    # Tasks with a dependency; a cycle is refused.
    design = lead.call("add_task", {"subject": "Design the API", "priority": 5})
    expect(design["status"] == "pending" and design["epoch"] == 0, "new task: %r" % design)
    build = lead.call(
        "add_task",
        {"subject": "Build it", "description": "after the design", "blocked_by": [design["id"]]},
    )
    expect(build["blocked_by"] == [design["id"]], "blocked_by: %r" % build)
    expect(build["id"] > design["id"], "ids grow: %r %r" % (design, build))
    expect_error("cycle", lead.call, "add_dependency", {"id": design["id"], "on": [build["id"]]})
    expect_error("not_found", lead.call, "get_task", {"id": 999999})

    # An unknown op gets an error response; the connection stays usable.
    expect_error("unknown_request", lead.call, "frobnicate", {"x": 1})
    expect_error("invalid_args", lead.call, "list_tasks", {"status": "bogus"})
    expect_error("invalid_args", lead.call, "add_task", {"priority": 1})
    st = lead.call("status")
    expect(st["protocol"] == PROTOCOL_VERSION, "status: %r" % st)
    expect(any(t["name"] == team for t in st["teams"]), "status teams: %r" % st)

    # A hello without a credential is refused: at the hello over the network,
    # and every request on the socket.
    why = expect_refused(path, "lead", team, "", cafile, "list_tasks")
    expect("lead.key" in why, "refusal: %r" % why)

    # A teammate on a second connection registers, with the lead's credential,
    # and gets its own.
    first = Client.connect(path, name="alice", team=team, client="pydemo", cafile=cafile)
    expect_error("not_registered", first.call, "claim_next")
    member = first.call("register", {"role": "dev", "pid": os.getpid()})
    own = member["credential"]
    expect(isinstance(own, str) and own, "member credential: %r" % member)
    first.close()
    # Its own credential vouches for alice only, and registers her again.
    expect_refused(path, "bob", team, own, cafile, "inbox")
    alice = Client.connect(path, name="alice", team=team, client="pydemo", credential=own, cafile=cafile)
    deadline = time.monotonic() + 10
    while True:
        try:
            member = alice.call("register", {"role": "dev", "pid": os.getpid()})
            break
        except ServerError as e:
            # The first session's close may not have reached boardd yet.
            if e.code != "already_connected" or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    expect("credential" not in member, "her own registration keeps it: %r" % member)
    expect(member["name"] == "alice" and member["status"] == "idle", "member: %r" % member)
    expect(member["connected"] is True, "member: %r" % member)

    claim = alice.call("claim_next")
    expect(claim is not None, "claim_next found nothing")
    task, epoch = claim["task"], claim["epoch"]
    expect(task["id"] == design["id"], "claimed %r, wanted the design task" % task)
    expect(task["status"] == "in_progress" and task["owner"] == "alice", "claim: %r" % claim)
    expect(task["attempts"] == 1 and epoch == task["epoch"], "claim: %r" % claim)
    expect_error("already_holds_task", alice.call, "claim_next")
    alice.call("heartbeat", {"id": task["id"], "epoch": epoch})

    expect_error("stale_epoch", alice.call, "complete_task", {"id": task["id"], "epoch": epoch + 1})
    done = alice.call("complete_task", {"id": task["id"], "epoch": epoch, "result": "see api.md"})
    expect(done["status"] == "completed" and done["result"] == "see api.md", "done: %r" % done)
    expect_error("stale_epoch", alice.call, "complete_task", {"id": task["id"], "epoch": epoch})

    # The dependent is ready now: wait_for_work claims it atomically.
    work = alice.call("wait_for_work", {"timeout_ms": 5000})
    expect(work["kind"] == "task", "wait_for_work: %r" % work)
    expect(work["claim"]["task"]["id"] == build["id"], "wait_for_work: %r" % work)
    second = work["claim"]
    alice.call("release_task", {"id": build["id"], "epoch": second["epoch"]})
    again = alice.call("claim_task", {"id": build["id"]})
    expect(again["epoch"] == second["epoch"] + 1, "epoch grows: %r" % again)
    expect(again["task"]["attempts"] == 1, "release without error is free: %r" % again)
    alice.call("complete_task", {"id": build["id"], "epoch": again["epoch"], "result": "built"})

    # Messages: recipients are checked; delivery is at least once until ack.
    expect_error("unknown_recipient", lead.call, "send", {"to": "nobody", "content": "hi"})
    msg = lead.call("send", {"to": "alice", "content": "please review", "request_id": "r1"})
    expect(msg["kind"] == "message" and msg["from"] == "lead", "message: %r" % msg)
    work = alice.call("wait_for_work", {"timeout_ms": 5000})
    expect(work["kind"] == "messages", "wait_for_work: %r" % work)
    expect([m["id"] for m in work["messages"]] == [msg["id"]], "messages: %r" % work)
    expect(work["messages"][0]["request_id"] == "r1", "messages: %r" % work)
    work = alice.call("wait_for_work", {"timeout_ms": 5000})  # not acked: same again
    expect(work["kind"] == "messages" and work["messages"][0]["id"] == msg["id"], "redelivery: %r" % work)
    acked = alice.call("ack", {"ids": [msg["id"]]})
    expect(acked == {"acked": 1}, "ack: %r" % acked)
    expect(alice.call("ack", {"ids": [msg["id"]]}) == {"acked": 0}, "second ack")
    expect(alice.call("inbox") == [], "inbox after ack")
    work = alice.call("wait_for_work", {"timeout_ms": 50})
    expect(work == {"kind": "timeout"}, "idle wait: %r" % work)
    reply = alice.call("send", {"to": "lead", "kind": "result", "content": "reviewed"})
    expect([m["id"] for m in lead.call("inbox")] == [reply["id"]], "lead inbox")

    # Events: a third connection subscribes and sees changes after they are durable.
    watcher = Client.connect(path, name="watcher", team=team, client="pydemo", cafile=cafile)
    expect(watcher.call("subscribe") == {}, "subscribe result")
    third = lead.call("add_task", {"subject": "Ship it", "role": "ops"})
    ev = wait_event(watcher, lambda e: e["kind"] == "task_created" and e["task"] == third["id"], "task_created")
    expect(ev["team"] == team and ev["actor"] == "lead" and ev["seq"] > 0, "event: %r" % ev)
    expect(isinstance(ev["at"], int) and isinstance(ev["detail"], str), "event: %r" % ev)
    expect_error("role_mismatch", alice.call, "claim_task", {"id": third["id"]})
    expect(alice.call("claim_next") is None, "claim_next for a dev with only an ops task")
    history = lead.call("get_task", {"id": design["id"]})
    kinds = [e["kind"] for e in history["history"]]
    expect(history["id"] == design["id"] and kinds[0] == "task_created", "history: %r" % kinds)
    expect("task_completed" in kinds, "history: %r" % kinds)
    since = lead.call("events", {"since": ev["seq"] - 1, "limit": 10})
    expect(since and since[0]["seq"] == ev["seq"], "events since: %r" % since)

    # A dropped connection returns the claim to pending within milliseconds.
    bob = Client.connect(path, name="bob", team=team, client="pydemo", cafile=cafile)
    bob.call("register", {"role": "ops"})
    held = bob.call("claim_next")
    expect(held and held["task"]["id"] == third["id"], "bob claim: %r" % held)
    bob.close()
    ev = wait_event(watcher, lambda e: e["kind"] == "task_released" and e["task"] == third["id"], "task_released")
    expect(ev["actor"] == "boardd", "release event: %r" % ev)
    t = lead.call("get_task", {"id": third["id"]})
    expect(t["status"] == "pending" and t["owner"] is None, "after disconnect: %r" % t)

    # Team requests: only the lead asks for a shutdown, and only of a connected
    # member; only the target answers, once; the protocol kinds cannot be sent.
    expect_error("permission_denied", alice.call, "request_shutdown", {"to": "alice"})
    expect_error("not_connected", lead.call, "request_shutdown", {"to": "bob"})
    expect_error("unknown_recipient", lead.call, "request_shutdown", {"to": "nobody"})
    expect_error(
        "invalid_args", alice.call, "send", {"to": "lead", "kind": "shutdown_response", "content": "yes"}
    )
    req = lead.call("request_shutdown", {"to": "alice", "reason": "wrap up", "timeout_ms": 60000})
    expect(req["kind"] == "shutdown" and req["state"] == "pending", "request: %r" % req)
    expect(req["from"] == "lead" and req["to"] == "alice" and req["forced"] is False, "request: %r" % req)
    expect(req["deadline"] - req["created_at"] == 60000, "deadline: %r" % req)
    asked = [m for m in alice.call("inbox") if m["kind"] == "shutdown_request"]
    expect(len(asked) == 1 and asked[0]["request_id"] == str(req["id"]), "asked: %r" % asked)
    expect(asked[0]["content"] == "wrap up" and asked[0]["from"] == "lead", "asked: %r" % asked)
    expect_error("permission_denied", lead.call, "respond_shutdown", {"request": req["id"], "approve": True})
    expect_error("invalid_args", alice.call, "respond_shutdown", {"request": req["id"], "approve": False})
    no = alice.call("respond_shutdown", {"request": req["id"], "approve": False, "reason": "busy"})
    expect(no["state"] == "rejected" and no["answered_by"] == "alice", "answer: %r" % no)
    expect(no["feedback"] == "busy", "answer: %r" % no)
    expect_error("invalid_state", alice.call, "respond_shutdown", {"request": req["id"], "approve": True})
    expect(lead.call("get_request", {"request": req["id"]}) == no, "get_request")
    listed = lead.call("list_requests", {"kind": "shutdown", "state": "rejected"})
    expect([r["id"] for r in listed] == [req["id"]], "list_requests: %r" % listed)
    told = [m for m in lead.call("inbox") if m["kind"] == "shutdown_response"]
    expect(len(told) == 1 and told[0]["from"] == "alice", "lead told: %r" % told)
    expect_error("not_found", lead.call, "get_request", {"request": 999999})
    alice.call("ack", {"ids": [m["id"] for m in asked]})

    # Only the lead may cancel.
    expect_error("permission_denied", alice.call, "cancel_task", {"id": third["id"]})
    expect(lead.call("cancel_task", {"id": third["id"]})["status"] == "cancelled", "cancel")

    # A malformed frame gets an error frame, then the connection closes.
    watcher.send_raw(struct.pack(">I", 8) + b"not json")
    try:
        while True:
            watcher.next_event(timeout=10)
    except ConnectionClosed as e:
        expect(e.code == "bad_frame", "malformed frame: %r" % (e.error,))
    # ...and only that connection.
    expect(lead.call("list_tasks", {"status": "completed"})[0]["id"] == design["id"], "lead still works")

    for c in (alice, lead):
        c.close()
    print("ok")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3, 4):
        print("usage: %s SOCKET|tls://HOST:PORT [LEAD_KEY_FILE [CA_FILE]]" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    if len(sys.argv) >= 3:
        os.environ["TEAMBOARD_LEAD_KEY"] = sys.argv[2]
    try:
        demo(sys.argv[1], sys.argv[3] if len(sys.argv) == 4 else None)
    except (Mismatch, TeamboardError, OSError, ValueError, KeyError, TypeError) as e:
        print("FAILED: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
