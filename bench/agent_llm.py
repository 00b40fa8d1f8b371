#!/usr/bin/env python3
"""A scripted model server for side-by-side measurements of agents (bench_startup.py).

Speaks three wire formats on loopback, streamed as server-sent events:
  POST /v1/messages           Anthropic Messages
  POST /v1/chat/completions   OpenAI Chat Completions
  POST /v1/responses          OpenAI Responses

Every agent under test gets the same script:
  turn 1 (no tool results yet):  optional thinking, then one tool call per FILE
                                 (a read tool if the agent offers one, else its shell)
  turn 2 (tool results present): CHUNKS text deltas of CHUNK, then end_turn
With no FILES, turn 1 is already the text turn.

Each request is logged as one JSON line to --log (size of system prompt, tools, messages).
"""

import argparse
import io
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARGS = None
LOCK = threading.Lock()
COUNTER = [0]
PRERENDERED: dict = {}

READ_NAMES = ["Read", "read", "read_file", "view", "ReadFile"]
SHELL_NAMES = ["Bash", "bash", "shell", "exec_command", "shell_command", "run_shell_command"]


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}_{COUNTER[0]:06d}"


def tool_specs(body, fmt):
    """name -> property names, from the request's tool list."""
    specs = {}
    for t in body.get("tools") or []:
        if fmt == "anthropic":
            name, schema = t.get("name"), t.get("input_schema") or {}
        elif fmt == "chat":
            fn = t.get("function") or {}
            name, schema = fn.get("name"), fn.get("parameters") or {}
        else:
            name, schema = t.get("name"), t.get("parameters") or {}
        if name:
            specs[name] = schema.get("properties") or {}
    return specs


def shell_call(specs, cmd):
    shell = next((n for n in SHELL_NAMES if n in specs), None)
    if shell is None:
        return None
    props = specs[shell]
    if "command" in props and (props["command"].get("type") == "array"):
        return (shell, {"command": ["bash", "-lc", cmd]})
    if "cmd" in props:
        return (shell, {"cmd": cmd})
    return (shell, {"command": cmd})


def plan_calls(specs):
    """One (name, arguments) per file: a read tool if offered, else the shell."""
    if ARGS.shell:
        call = shell_call(specs, ARGS.shell)
        return [call] if call else []
    calls = []
    for path in ARGS.files:
        read = next((n for n in READ_NAMES if n in specs), None)
        if read:
            props = specs[read]
            key = next(
                (k for k in ("file_path", "path", "filePath", "absolute_path") if k in props),
                "file_path",
            )
            calls.append((read, {key: path}))
            continue
        call = shell_call(specs, f"cat {path}")
        if call is None:
            break
        calls.append(call)
    return calls


def has_tool_results(body, fmt):
    if fmt == "anthropic":
        for m in body.get("messages") or []:
            c = m.get("content")
            if isinstance(c, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in c
            ):
                return True
        return False
    if fmt == "chat":
        return any(m.get("role") == "tool" for m in body.get("messages") or [])
    items = body.get("input") or []
    return any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)


def size_of(body, fmt):
    system = body.get("system") if fmt == "anthropic" else None
    if fmt == "chat":
        system = [m for m in body.get("messages") or [] if m.get("role") in ("system", "developer")]
    if fmt == "responses":
        system = body.get("instructions")
    msgs = body.get("messages") if fmt != "responses" else body.get("input")
    return {
        "system_chars": len(json.dumps(system)) if system else 0,
        "tools": len(body.get("tools") or []),
        "tools_chars": len(json.dumps(body.get("tools") or [])),
        "messages": len(msgs or []) if isinstance(msgs, list) else 1,
        "messages_chars": len(json.dumps(msgs)) if msgs else 0,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            data = json.dumps(
                {
                    "object": "list",
                    "data": [
                        {"id": ARGS.model, "object": "model", "created": 0, "owned_by": "fake"}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return self.json({"input_tokens": max(1, len(raw) // 4)})
        if path.endswith("/messages"):
            fmt = "anthropic"
        elif path.endswith("/chat/completions"):
            fmt = "chat"
        elif path.endswith("/responses"):
            fmt = "responses"
        else:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if ARGS.dump:
            os.makedirs(ARGS.dump, exist_ok=True)
            with open(os.path.join(ARGS.dump, f"{next_id('req')}.json"), "w") as f:
                json.dump({"path": path, "body": body}, f)
        specs = tool_specs(body, fmt)
        calls = [] if has_tool_results(body, fmt) else plan_calls(specs)
        if ARGS.log:
            rec = {
                "t": time.time(),
                "fmt": fmt,
                "path": path,
                "stream": body.get("stream"),
                "calls": len(calls),
                "tool_names": sorted(specs),
                **size_of(body, fmt),
            }
            with LOCK, open(ARGS.log, "a") as f:
                f.write(json.dumps(rec) + "\n")
        if ARGS.fail:
            return self.json(
                {
                    "type": "error",
                    "error": {
                        "type": "overloaded_error" if ARGS.fail == 529 else "api_error",
                        "message": f"injected {ARGS.fail}",
                    },
                },
                ARGS.fail,
            )
        # Agents make side requests (titles, summaries) without streaming: answer them plainly.
        if not body.get("stream"):
            return self.plain(fmt, body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        if ARGS.sse_file:
            with LOCK:
                first, ARGS.sse_served = not getattr(ARGS, "sse_served", False), True
            if first:
                data = open(ARGS.sse_file, "rb").read()
                for i in range(0, len(data), 61):  # arrive in pieces, as over a network
                    self.wfile.write(data[i : i + 61])
                return
            calls = []
        if ARGS.prerender:
            # The body is rendered once per (format, calls) and sent whole, so this
            # server's own per-event work is not in what a client measures.
            key = (fmt, json.dumps(calls))
            data = PRERENDERED.get(key)
            if data is None:
                real, self.wfile = self.wfile, io.BytesIO()
                try:
                    getattr(self, "stream_" + fmt)(body, calls)
                    data = PRERENDERED[key] = self.wfile.getvalue()
                finally:
                    self.wfile = real
            self.wfile.write(data)
            return
        getattr(self, "stream_" + fmt)(body, calls)

    # ---- plain (non-streaming) answers -------------------------------------------------
    def json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def plain(self, fmt, body):
        text = "ok"
        if fmt == "anthropic":
            return self.json(
                {
                    "id": next_id("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", ARGS.model),
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                }
            )
        if fmt == "chat":
            return self.json(
                {
                    "id": next_id("chatcmpl"),
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", ARGS.model),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                }
            )
        return self.json(
            {
                "id": next_id("resp"),
                "object": "response",
                "status": "completed",
                "model": body.get("model", ARGS.model),
                "output": [
                    {
                        "type": "message",
                        "id": next_id("msg"),
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ],
                "usage": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11},
            }
        )

    # ---- streaming ---------------------------------------------------------------------
    def sse(self, data, event=None):
        out = (
            (f"event: {event}\n" if event else "")
            + "data: "
            + (data if isinstance(data, str) else json.dumps(data))
            + "\n\n"
        )
        self.wfile.write(out.encode())

    def text_deltas(self):
        return [ARGS.chunk] * ARGS.chunks

    def stream_anthropic(self, body, calls):
        model = body.get("model", ARGS.model)
        e = self.sse
        e(
            {
                "type": "message_start",
                "message": {
                    "id": next_id("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 100,
                        "output_tokens": 1,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                    },
                },
            },
            "message_start",
        )
        idx = 0
        if calls:
            if ARGS.thinking and body.get("thinking"):
                e(
                    {
                        "type": "content_block_start",
                        "index": idx,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                    },
                    "content_block_start",
                )
                e(
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "thinking_delta", "thinking": "I will read the files."},
                    },
                    "content_block_delta",
                )
                e(
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "signature_delta", "signature": "c2ln"},
                    },
                    "content_block_delta",
                )
                e({"type": "content_block_stop", "index": idx}, "content_block_stop")
                idx += 1
            for name, args in calls:
                e(
                    {
                        "type": "content_block_start",
                        "index": idx,
                        "content_block": {
                            "type": "tool_use",
                            "id": next_id("toolu"),
                            "name": name,
                            "input": {},
                        },
                    },
                    "content_block_start",
                )
                s = json.dumps(args)
                for i in range(0, len(s), 16):
                    e(
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "input_json_delta", "partial_json": s[i : i + 16]},
                        },
                        "content_block_delta",
                    )
                e({"type": "content_block_stop", "index": idx}, "content_block_stop")
                idx += 1
            stop = "tool_use"
        else:
            e(
                {
                    "type": "content_block_start",
                    "index": idx,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for k, d in enumerate(self.text_deltas()):
                if ARGS.midstream_error and k == 3:
                    e(
                        {
                            "type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded"},
                        },
                        "error",
                    )
                    self.wfile.flush()
                    return
                e(
                    {
                        "type": "content_block_delta",
                        "index": idx,
                        "delta": {"type": "text_delta", "text": d},
                    },
                    "content_block_delta",
                )
                if ARGS.delay_ms:
                    self.wfile.flush()
                    time.sleep(ARGS.delay_ms / 1000)
            e({"type": "content_block_stop", "index": idx}, "content_block_stop")
            stop = "end_turn"
        e(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": max(1, ARGS.chunks)},
            },
            "message_delta",
        )
        e({"type": "message_stop"}, "message_stop")

    def stream_chat(self, body, calls):
        cid, model, created = next_id("chatcmpl"), body.get("model", ARGS.model), int(time.time())

        def chunk(delta, finish=None):
            self.sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )

        chunk({"role": "assistant", "content": ""})
        if calls:
            for i, (name, args) in enumerate(calls):
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": next_id("call"),
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
                s = json.dumps(args)
                for j in range(0, len(s), 16):
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": s[j : j + 16]}}]})
            chunk({}, "tool_calls")
        else:
            for d in self.text_deltas():
                chunk({"content": d})
            chunk({}, "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            self.sse(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": {
                        "prompt_tokens": 100,
                        "completion_tokens": max(1, ARGS.chunks),
                        "total_tokens": 100 + max(1, ARGS.chunks),
                    },
                }
            )
        self.sse("[DONE]")

    def stream_responses(self, body, calls):
        rid, model = next_id("resp"), body.get("model", ARGS.model)
        base = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "model": model,
            "status": "in_progress",
            "output": [],
        }
        seq = [0]

        def e(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self.sse(obj, obj["type"])

        e({"type": "response.created", "response": base})
        e({"type": "response.in_progress", "response": base})
        output = []
        if calls:
            for i, (name, args) in enumerate(calls):
                fid, call_id, s = next_id("fc"), next_id("call"), json.dumps(args)
                item = {
                    "type": "function_call",
                    "id": fid,
                    "call_id": call_id,
                    "name": name,
                    "arguments": "",
                    "status": "in_progress",
                }
                e({"type": "response.output_item.added", "output_index": i, "item": item})
                for j in range(0, len(s), 16):
                    e(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": fid,
                            "output_index": i,
                            "delta": s[j : j + 16],
                        }
                    )
                e(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": fid,
                        "output_index": i,
                        "arguments": s,
                    }
                )
                done = dict(item, arguments=s, status="completed")
                e({"type": "response.output_item.done", "output_index": i, "item": done})
                output.append(done)
        else:
            mid = next_id("msg")
            item = {
                "type": "message",
                "id": mid,
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            e({"type": "response.output_item.added", "output_index": 0, "item": item})
            e(
                {
                    "type": "response.content_part.added",
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            for d in self.text_deltas():
                e(
                    {
                        "type": "response.output_text.delta",
                        "item_id": mid,
                        "output_index": 0,
                        "content_index": 0,
                        "delta": d,
                        "logprobs": [],
                    }
                )
            text = "".join(self.text_deltas())
            e(
                {
                    "type": "response.output_text.done",
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            part = {"type": "output_text", "text": text, "annotations": []}
            e(
                {
                    "type": "response.content_part.done",
                    "item_id": mid,
                    "output_index": 0,
                    "content_index": 0,
                    "part": part,
                }
            )
            done = dict(item, status="completed", content=[part])
            e({"type": "response.output_item.done", "output_index": 0, "item": done})
            output.append(done)
        final = dict(
            base,
            status="completed",
            output=output,
            usage={
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": max(1, ARGS.chunks),
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 100 + max(1, ARGS.chunks),
            },
        )
        e({"type": "response.completed", "response": final})


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", help="write the bound port here")
    p.add_argument("--files", default="", help="comma-separated paths to read in turn 1")
    p.add_argument("--chunks", type=int, default=200)
    p.add_argument("--chunk", default="word ")
    p.add_argument("--thinking", action="store_true")
    p.add_argument("--model", default="fake-model")
    p.add_argument("--log")
    p.add_argument("--delay-ms", type=float, default=0.0, help="sleep between text deltas")
    p.add_argument(
        "--shell",
        default="",
        help="turn 1 calls the shell tool with this command instead of reading files",
    )
    p.add_argument("--fail", type=int, default=0, help="answer every request with this HTTP status")
    p.add_argument(
        "--midstream-error",
        action="store_true",
        help="send an overloaded error event after a few deltas",
    )
    p.add_argument(
        "--sse-file", help="answer the first streaming request with this recorded body, verbatim"
    )
    p.add_argument("--dump", help="write every request body to DIR/req-NNNN.json")
    p.add_argument(
        "--prerender",
        action="store_true",
        help="render each streamed answer once and send it in one write (bench_client.py)",
    )
    ARGS = p.parse_args()
    ARGS.files = [f for f in ARGS.files.split(",") if f]
    srv = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.replace(tmp, ARGS.port_file)
    print(f"fakellm listening on 127.0.0.1:{port}", file=sys.stderr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
