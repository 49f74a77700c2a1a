#!/usr/bin/env python3
"""A Gatehouse client in Python, standard library only.

It calls the gateway's JSON-RPC boundary (POST /rpc) four ways: a single call, a batch, a
delegated task whose events it reads as they stream (nekte.delegate answers with
Server-Sent Events), and the same call without and with a bearer token.

    GATEHOUSE_URL    the gateway (default http://127.0.0.1:8080, where `make run` listens)
    GATEHOUSE_TOKEN  a JWT sent as "Authorization: Bearer ..." (optional; see README.md)

It prints one line per step (the same lines as the TypeScript and Go clients beside it) and
exits 1 when a step does not go as a client would expect.
"""

import json
import os
import secrets
import sys
import urllib.error
import urllib.request

URL = os.environ.get("GATEHOUSE_URL", "http://127.0.0.1:8080").rstrip("/")
TOKEN = os.environ.get("GATEHOUSE_TOKEN", "")
TIMEOUT = 60  # seconds for one HTTP exchange


class Failed(Exception):
    """A step that did not go as expected."""


def compact(value):
    """JSON without spaces, as the other two clients print it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def post(body, token=TOKEN, accept="application/json"):
    """POSTs a JSON-RPC body to /rpc and returns the open response (any HTTP status)."""
    headers = {"Content-Type": "application/json", "Accept": accept}
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(URL + "/rpc", data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        return urllib.request.urlopen(req, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:  # 4xx and 5xx carry a JSON-RPC error body too
        return e


def result_of(what, answer):
    """The result of a JSON-RPC response object, or Failed with its error."""
    if "error" in answer:
        err = answer["error"]
        raise Failed("%s: error %s %s" % (what, err.get("code"), err.get("message")))
    return answer["result"]


def call():
    """A single call: calc.subtract with named params."""
    params = {"minuend": 42, "subtrahend": 23}
    with post({"jsonrpc": "2.0", "method": "calc.subtract", "params": params, "id": 1}) as resp:
        answer = json.load(resp)
    print("call calc.subtract %s = %s" % (compact(params), compact(result_of("call calc.subtract", answer))))


def batch():
    """A batch: members run concurrently, the answers come in request order, a notification
    gets none, and one member failing does not fail the others."""
    requests = [
        {"jsonrpc": "2.0", "method": "calc.subtract", "params": [10, 4], "id": 1},
        {"jsonrpc": "2.0", "method": "no.such_method", "id": 2},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
    ]
    with post(requests) as resp:
        answers = json.load(resp)
    if not isinstance(answers, list):
        raise Failed("batch refused: %s" % compact(answers))
    print("batch of %d requests (one a notification): %d answers" % (len(requests), len(answers)))
    for a in answers:
        if "error" in a:
            print("  id %s: error %s %s" % (compact(a["id"]), a["error"]["code"], a["error"]["message"]))
        else:
            print("  id %s: %s" % (compact(a["id"]), compact(a["result"])))


def events(resp):
    """Yields (name, data) for each Server-Sent Event of resp as it arrives."""
    name, data = "", []
    for raw in resp:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if name or data:
                yield name or "message", json.loads("\n".join(data))
            name, data = "", []
        elif line.startswith(":"):
            continue  # a comment: keep-alive
        elif line.startswith("event:"):
            name = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:"):].removeprefix(" "))
    if name or data:
        yield name or "message", json.loads("\n".join(data))


def delegate(cap="test_tool_with_progress"):
    """A delegated task: nekte.delegate streams the task's life as events until it ends."""
    task = {
        "id": "py-" + secrets.token_hex(6),
        "desc": "the Python example",
        "cap": cap,
        "in": {},
        "budget": {"max_tokens": 4096, "detail_level": "minimal"},
    }
    print("delegate " + cap)
    with post({"jsonrpc": "2.0", "method": "nekte.delegate", "params": {"task": task}, "id": 1},
              accept="text/event-stream") as resp:
        if not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            result_of("delegate " + cap, json.load(resp))  # refused before it started
            raise Failed("delegate %s: no event stream" % cap)
        for name, data in events(resp):
            if name == "status_change":
                print("  status " + data["to"])
            elif name == "progress":
                print("  progress %s/%s %s" % (data["processed"], data["total"], data.get("message", "")))
            elif name == "partial":
                print("  partial " + compact(data["out"]))
            elif name == "complete":
                out = data["out"].get("minimal")
                print("  complete " + (out if isinstance(out, str) else compact(data["out"])))
                return
            elif name == "error":
                raise Failed("delegate %s: error %s %s" % (cap, data["code"], data["message"]))
            elif name == "cancelled":
                raise Failed("delegate %s: cancelled %s" % (cap, compact(data)))
    raise Failed("delegate %s: the stream ended before the task did" % cap)


def auth():
    """The same call without a token, then with GATEHOUSE_TOKEN."""
    body = {"jsonrpc": "2.0", "method": "calc.subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 1}
    with post(body, token="") as resp:
        status, challenge, answer = resp.status, resp.headers.get("WWW-Authenticate", ""), json.load(resp)
    if status == 200:
        print("auth without a token: HTTP 200 (this gateway admits callers without a token)")
    else:
        err = answer.get("error", {})
        print("auth without a token: HTTP %d (WWW-Authenticate: %s), error %s %s (%s)"
              % (status, challenge, err.get("code"), err.get("message"), (err.get("data") or {}).get("reason", "")))
    if not TOKEN:
        print("auth with the token: skipped (set GATEHOUSE_TOKEN)")
        return
    with post(body) as resp:
        status, answer = resp.status, json.load(resp)
    print("auth with the token: HTTP %d, calc.subtract = %s" % (status, compact(result_of("auth with the token", answer))))


def main():
    try:
        call()
        batch()
        delegate()
        auth()
    except Failed as e:
        print("gatehouse client: %s" % e, file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as e:  # unreachable gateway, not JSON, not JSON-RPC
        print("gatehouse client: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
