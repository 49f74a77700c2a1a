// A Gatehouse client in TypeScript on Node (>= 20).
//
// It calls the gateway's JSON-RPC boundary (POST /rpc) four ways: a single call and a batch
// with the json-rpc-2.0 client library, a delegated task whose events it reads as they
// stream (nekte.delegate answers with Server-Sent Events, read here from fetch's body), and
// the same call without and with a bearer token.
//
//   GATEHOUSE_URL    the gateway (default http://127.0.0.1:8080, where `make run` listens)
//   GATEHOUSE_TOKEN  a JWT sent as "Authorization: Bearer ..." (optional; see README.md)
//
// It prints one line per step (the same lines as the Python and Go clients beside it) and
// exits 1 when a step does not go as a client would expect.

import { randomBytes } from "node:crypto";
import {
  JSONRPCClient,
  JSONRPCErrorException,
  type JSONRPCRequest,
  type JSONRPCResponse,
} from "json-rpc-2.0";

const BASE = (process.env.GATEHOUSE_URL || "http://127.0.0.1:8080").replace(/\/$/, "");
const TOKEN = process.env.GATEHOUSE_TOKEN || "";
const TIMEOUT_MS = 60_000; // one HTTP exchange, a delegated task's whole stream included

/** A step that did not go as expected. */
class Failed extends Error {}

/** The HTTP side of one call: the token it carries ("" for none), and the HTTP status of
 * its answer once it came. */
interface CallParams {
  token: string;
  status?: number;
}

/** POSTs a JSON-RPC body to /rpc with token (none when ""). */
function post(body: unknown, token: string, accept = "application/json"): Promise<Response> {
  const headers: Record<string, string> = { "Content-Type": "application/json", Accept: accept };
  if (token) headers.Authorization = `Bearer ${token}`;
  return fetch(`${BASE}/rpc`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
}

// The library's client over HTTP: it sends what it is given and hands the answers back. An
// error the gateway could not attribute to a request (id null: a credential refused, a
// batch refused whole) is given the id of each request it answers, so that the caller sees
// its code.
const rpc = new JSONRPCClient<CallParams>(async (payload: JSONRPCRequest | JSONRPCRequest[], params) => {
  const resp = await post(payload, params.token);
  params.status = resp.status;
  const text = await resp.text();
  if (text === "") return; // notifications only
  let answer: JSONRPCResponse | JSONRPCResponse[];
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${resp.status}, not a JSON-RPC answer: ${text.slice(0, 200)}`);
  }
  if (!Array.isArray(answer) && answer.id === null && answer.error) {
    const error = answer.error;
    const requests = Array.isArray(payload) ? payload : [payload];
    rpc.receive(requests.filter((r) => r.id != null).map((r) => ({ jsonrpc: "2.0", id: r.id!, error })));
    return;
  }
  rpc.receive(answer);
});

/** JSON without spaces, as the other two clients print it. */
const compact = (v: unknown): string => JSON.stringify(v);

/** The result of method, or Failed with its JSON-RPC error. */
async function request(what: string, method: string, params: object, http: CallParams = { token: TOKEN }): Promise<unknown> {
  try {
    return await rpc.request(method, params, http);
  } catch (e) {
    // The library answers a request it could not send with code 0 (its DefaultErrorCode).
    if (e instanceof JSONRPCErrorException && e.code !== 0) throw new Failed(`${what}: error ${e.code} ${e.message}`);
    throw new Failed(`${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** A single call: calc.subtract with named params. */
async function call(): Promise<void> {
  const params = { minuend: 42, subtrahend: 23 };
  const result = await request("call calc.subtract", "calc.subtract", params);
  console.log(`call calc.subtract ${compact(params)} = ${compact(result)}`);
}

/** A batch: members run concurrently, the answers come in request order, a notification
 * gets none, and one member failing does not fail the others. */
async function batch(): Promise<void> {
  const requests: JSONRPCRequest[] = [
    { jsonrpc: "2.0", method: "calc.subtract", params: [10, 4], id: 1 },
    { jsonrpc: "2.0", method: "no.such_method", id: 2 },
    { jsonrpc: "2.0", method: "notify_hello", params: [7] },
  ];
  const answers = await rpc.requestAdvanced(requests, { token: TOKEN });
  console.log(`batch of ${requests.length} requests (one a notification): ${answers.length} answers`);
  for (const a of answers) {
    if (a.error) console.log(`  id ${compact(a.id)}: error ${a.error.code} ${a.error.message}`);
    else console.log(`  id ${compact(a.id)}: ${compact(a.result)}`);
  }
}

/** Yields each Server-Sent Event of body as it arrives. */
async function* events(body: ReadableStream<Uint8Array>): AsyncGenerator<{ name: string; data: any }> {
  const decoder = new TextDecoder();
  let buffered = "";
  let name = "";
  let data: string[] = [];
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl).replace(/\r$/, "");
      buffered = buffered.slice(nl + 1);
      if (line === "") {
        if (name || data.length) yield { name: name || "message", data: JSON.parse(data.join("\n")) };
        name = "";
        data = [];
      } else if (line.startsWith(":")) {
        // a comment: keep-alive
      } else if (line.startsWith("event:")) {
        name = line.slice("event:".length).trim();
      } else if (line.startsWith("data:")) {
        data.push(line.slice("data:".length).replace(/^ /, ""));
      }
    }
  }
}

/** A delegated task: nekte.delegate streams the task's life as events until it ends. */
async function delegate(cap = "test_tool_with_progress"): Promise<void> {
  const task = {
    id: `ts-${randomBytes(6).toString("hex")}`,
    desc: "the TypeScript example",
    cap,
    in: {},
    budget: { max_tokens: 4096, detail_level: "minimal" },
  };
  console.log(`delegate ${cap}`);
  const resp = await post({ jsonrpc: "2.0", method: "nekte.delegate", params: { task }, id: 1 }, TOKEN, "text/event-stream");
  if (!resp.headers.get("Content-Type")?.startsWith("text/event-stream") || !resp.body) {
    const answer = (await resp.json()) as JSONRPCResponse; // refused before it started
    throw new Failed(`delegate ${cap}: error ${answer.error?.code} ${answer.error?.message}`);
  }
  for await (const { name, data } of events(resp.body)) {
    switch (name) {
      case "status_change":
        console.log(`  status ${data.to}`);
        break;
      case "progress":
        console.log(`  progress ${data.processed}/${data.total} ${data.message ?? ""}`);
        break;
      case "partial":
        console.log(`  partial ${compact(data.out)}`);
        break;
      case "complete":
        console.log(`  complete ${typeof data.out?.minimal === "string" ? data.out.minimal : compact(data.out)}`);
        return;
      case "error":
        throw new Failed(`delegate ${cap}: error ${data.code} ${data.message}`);
      case "cancelled":
        throw new Failed(`delegate ${cap}: cancelled ${compact(data)}`);
    }
  }
  throw new Failed(`delegate ${cap}: the stream ended before the task did`);
}

/** The same call without a token, then with GATEHOUSE_TOKEN. */
async function auth(): Promise<void> {
  const params = { minuend: 42, subtrahend: 23 };
  const resp = await post({ jsonrpc: "2.0", method: "calc.subtract", params, id: 1 }, "");
  const answer = (await resp.json()) as JSONRPCResponse;
  if (resp.status === 200) {
    console.log("auth without a token: HTTP 200 (this gateway admits callers without a token)");
  } else {
    const e = answer.error;
    console.log(
      `auth without a token: HTTP ${resp.status} (WWW-Authenticate: ${resp.headers.get("WWW-Authenticate") ?? ""}), ` +
        `error ${e?.code} ${e?.message} (${e?.data?.reason ?? ""})`,
    );
  }
  if (!TOKEN) {
    console.log("auth with the token: skipped (set GATEHOUSE_TOKEN)");
    return;
  }
  const http: CallParams = { token: TOKEN };
  const result = await request("auth with the token", "calc.subtract", params, http);
  console.log(`auth with the token: HTTP ${http.status}, calc.subtract = ${compact(result)}`);
}

try {
  await call();
  await batch();
  await delegate();
  await auth();
} catch (e) {
  console.error(`gatehouse client: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
}
