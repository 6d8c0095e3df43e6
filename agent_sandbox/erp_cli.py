"""The `erp` command: a thin JSON client over the bb-erp agent API (runtime guide §7).

Everything it does is one HTTP request that curl could send: it adds the bearer token from
ERP_TOKEN to a path under ERP_URL and prints the JSON answer. It never retries by itself, so
what the agent sees is what the server answered.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from agent_sandbox.attachments import attachment_filename, looks_like_text
from agent_sandbox.client import DEFAULT_TIMEOUT_S, ErpClient, ErpResponse, ErpUnreachable, normalize_path

EXIT_OK = 0
EXIT_HTTP = 1  # the ERP answered with an error status, or could not be reached
EXIT_USAGE = 2  # bad arguments or missing ERP_URL / ERP_TOKEN

HELP = """\
erp - command-line client of the company ERP (JSON over HTTP)

usage:
  erp whoami                        who you are signed in as: roles, limits, boxes, business date
  erp docs                          every API route (method, path, summary) and the handbook files
  erp docs WORD                     routes mentioning WORD, with their query and body fields
  erp docs FILE                     print a handbook file (e.g. erp docs ap-policy.md)
  erp get PATH [k=v ...]            GET with query parameters
  erp post PATH [--data @file.json|JSON] [--key KEY] [k=v ...]
  erp patch|put PATH [--data ...] [--key KEY] [k=v ...]
  erp delete PATH [--key KEY]
  erp inbox [--box B] [--unread]    messages in your boxes
  erp read MSG                      one message with its attachment list (marks it read)
  erp attachment MSG N [-o FILE]    attachment N (1-based) of a message; -o - writes raw bytes to stdout
  erp report NAME [k=v ...]         a report (erp get /reports lists them)
  erp help                          this text

body fields:
  k=v pairs set top-level fields of the JSON body; they are applied over --data.
  A value is parsed as JSON when it is valid JSON (qty=5 -> 5, ok=true -> true,
  lines='[{"item":"X","qty":2}]' -> a list), otherwise it is a string (vendor=V-0142).
  To force a string that looks like a number, quote it: ref='"10001"'.
  --data @- reads the body from stdin.

idempotency:
  --key KEY sends the header Idempotency-Key: KEY. Repeating a write with the same key and
  the same body returns the first result (header Idempotent-Replay: true, noted on stderr)
  instead of acting twice. A write repeated without a key can act twice. erp never retries.

output and exit status:
  The server's JSON answer is printed pretty on stdout: {"business_date": ..., "data": ...}.
  On an HTTP error the problem document (status, code, detail) is printed on stdout as
  JSON too, a one-line summary goes to stderr, and the exit status is 1.
  Exit 1 also when the ERP cannot be reached or does not answer within 120 seconds.
  Exit 2 on a usage error or when ERP_URL or ERP_TOKEN is not set.

environment:
  ERP_URL    base URL of the ERP agent API (e.g. http://erp:8080)
  ERP_TOKEN  your bearer token
  ERP_TIMEOUT_S  request timeout in seconds (default 120)
  Everything erp does can be done with curl:
    curl -H "Authorization: Bearer $ERP_TOKEN" "$ERP_URL/whoami"
"""


class UsageError(Exception):
    """Bad command line; exit 2."""


# -- argument helpers ---------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A k=v value: JSON when it parses as JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def split_pairs(args: Sequence[str]) -> list[tuple[str, str]]:
    """`k=v` words as (k, v); anything else is a usage error."""
    pairs = []
    for word in args:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(f"expected k=v, got {word!r}")
        pairs.append((key, value))
    return pairs


def query_params(args: Sequence[str]) -> dict[str, Any]:
    """Query parameters from k=v words (strings; a repeated key becomes a list)."""
    params: dict[str, Any] = {}
    for key, value in split_pairs(args):
        if key in params:
            prev = params[key]
            params[key] = (prev if isinstance(prev, list) else [prev]) + [value]
        else:
            params[key] = value
    return params


def read_data(spec: str) -> Any:
    """The --data argument: `@file.json`, `@-` (stdin) or inline JSON."""
    if spec.startswith("@"):
        name = spec[1:]
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read --data file {name}: {exc.strerror or exc}") from exc
        source = "stdin" if name == "-" else name
    else:
        text, source = spec, "--data"
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{source} is not valid JSON: {exc}") from exc


def take_option(args: list[str], *names: str, flag: bool = False) -> str | bool | None:
    """Remove an option (and its value) from args; `--opt=value` is accepted too."""
    for i, word in enumerate(args):
        for name in names:
            if word == name:
                del args[i]
                if flag:
                    return True
                if i >= len(args):
                    raise UsageError(f"{name} needs a value")
                return args.pop(i)
            if not flag and word.startswith(name + "=") and name.startswith("--"):
                del args[i]
                return word[len(name) + 1 :]
    return False if flag else None


def reject_unknown_options(args: Sequence[str]) -> None:
    """Words starting with `--` that no command knows are usage errors (not k=v)."""
    for word in args:
        if word.startswith("--"):
            raise UsageError(f"unknown option {word}")


# -- output -------------------------------------------------------------------------------------


def emit_json(value: Any) -> None:
    """Pretty JSON on stdout."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    """A line for the human on stderr."""
    sys.stderr.write(f"erp: {text}\n")
    sys.stderr.flush()


def show(answer: ErpResponse, method: str, path: str) -> int:
    """Print an answer; return the exit status."""
    if answer.ok:
        if answer.replay:
            note("idempotent replay: this key was used before; the first result is shown")
        emit_json(answer.body if answer.body is not None else answer.content.decode("utf-8", "replace"))
        return EXIT_OK
    err = answer.to_error(method, path)
    emit_json(err.problem)
    note(f"HTTP {err.status} {err.code}: {err.detail}")
    if err.status == 401:
        note("the ERP refused ERP_TOKEN")
    return EXIT_HTTP


# -- the client from the environment -------------------------------------------------------------


def client_from_env(*, need_token: bool = True) -> ErpClient:
    """An ErpClient for ERP_URL / ERP_TOKEN without retries (the agent sees every failure)."""
    url = os.environ.get("ERP_URL", "").strip()
    token = os.environ.get("ERP_TOKEN", "").strip()
    missing = [name for name, value in (("ERP_URL", url), ("ERP_TOKEN", token)) if not value and (need_token or name == "ERP_URL")]
    if missing:
        raise UsageError(
            " and ".join(missing) + (" is" if len(missing) == 1 else " are") + " not set: "
            "export ERP_URL (the ERP's base URL) and ERP_TOKEN (your bearer token)"
        )
    if "://" not in url:
        raise UsageError(f"ERP_URL must be a URL such as http://erp:8080, got {url!r}")
    return ErpClient(url, token or None, timeout=request_timeout(), max_attempts=1)


def request_timeout() -> float:
    """120 seconds, unless ERP_TIMEOUT_S says otherwise (tests use a short one)."""
    text = os.environ.get("ERP_TIMEOUT_S", "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"ERP_TIMEOUT_S must be a number of seconds, got {text!r}") from None
    if value <= 0:
        raise UsageError(f"ERP_TIMEOUT_S must be positive, got {text!r}")
    return value


# -- commands -----------------------------------------------------------------------------------


def cmd_request(method: str, args: list[str]) -> int:
    """get/post/patch/put/delete PATH ..."""
    data_spec = take_option(args, "--data", "-d")
    key = take_option(args, "--key", "-k")
    reject_unknown_options(args)
    if not args:
        raise UsageError(f"erp {method.lower()} needs a PATH")
    path = normalize_path(args.pop(0))
    client = client_from_env()
    if method == "GET":
        if data_spec is not None:
            raise UsageError("GET takes no --data; give query parameters as k=v")
        answer = client.request("GET", path, params=query_params(args), key=key or None)  # type: ignore[arg-type]
        return show(answer, method, path)
    body: Any = read_data(str(data_spec)) if data_spec is not None else None
    pairs = split_pairs(args)
    if pairs:
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise UsageError("k=v fields need a JSON object body, but --data is not an object")
        for k, v in pairs:
            body[k] = parse_value(v)
    if method == "DELETE" and body is None:
        answer = client.request(method, path, key=key or None)  # type: ignore[arg-type]
    else:
        answer = client.request(method, path, json_body=body if body is not None else {}, key=key or None)  # type: ignore[arg-type]
    return show(answer, method, path)


def cmd_simple_get(path: str, args: list[str], params: dict[str, Any] | None = None) -> int:
    """A GET with no positional arguments left."""
    reject_unknown_options(args)
    if args:
        raise UsageError(f"unexpected arguments: {' '.join(args)}")
    client = client_from_env()
    return show(client.request("GET", path, params=params), "GET", path)


def cmd_inbox(args: list[str]) -> int:
    """inbox [--box B] [--unread]"""
    box = take_option(args, "--box", "-b")
    unread = take_option(args, "--unread", "-u", flag=True)
    params: dict[str, Any] = {}
    if box:
        params["box"] = box
    if unread:
        params["unread"] = "true"
    params.update(query_params([a for a in args if "=" in a and not a.startswith("-")]))
    rest = [a for a in args if not ("=" in a and not a.startswith("-"))]
    return cmd_simple_get("/inbox", rest, params)


def cmd_read(args: list[str]) -> int:
    """read MSG"""
    if len(args) != 1 or args[0].startswith("-"):
        raise UsageError("usage: erp read MSG")
    return cmd_simple_get(f"/inbox/{args[0]}", [])




def cmd_attachment(args: list[str]) -> int:
    """attachment MSG N [-o FILE]"""
    out = take_option(args, "-o", "--output")
    reject_unknown_options(args)
    if len(args) != 2:
        raise UsageError("usage: erp attachment MSG N [-o FILE]")
    msg, n = args
    if not n.isdigit() or int(n) < 1:
        raise UsageError(f"N is the attachment number, 1 for the first: got {n!r}")
    path = f"/inbox/{msg}/attachments/{int(n)}"
    client = client_from_env()
    answer = client.request("GET", path)
    if not answer.ok:
        return show(answer, "GET", path)
    filename = attachment_filename(answer)
    if out == "-":
        sys.stdout.buffer.write(answer.content)
        sys.stdout.flush()
        return EXIT_OK
    if out:
        target = Path(str(out))
        try:
            target.write_bytes(answer.content)
        except OSError as exc:
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
        emit_json({"saved": str(target), "bytes": len(answer.content), "content_type": answer.content_type, "filename": filename})
        return EXIT_OK
    if looks_like_text(answer):
        sys.stdout.write(answer.content.decode("utf-8", "replace"))
        if not answer.content.endswith(b"\n"):
            sys.stdout.write("\n")
        return EXIT_OK
    # Binary bytes on a terminal help nobody: describe the file and say how to save it.
    emit_json(
        {
            "filename": filename,
            "content_type": answer.content_type,
            "bytes": len(answer.content),
            "note": f"binary attachment; save it with: erp attachment {msg} {n} -o {filename or 'FILE'}",
        }
    )
    return EXIT_OK


def cmd_report(args: list[str]) -> int:
    """report NAME k=v..."""
    reject_unknown_options(args)
    if not args or "=" in args[0]:
        raise UsageError("usage: erp report NAME [k=v ...]   (erp get /reports lists the names)")
    name = args.pop(0)
    client = client_from_env()
    path = f"/reports/{name}"
    return show(client.request("GET", path, params=query_params(args)), "GET", path)


# -- docs ---------------------------------------------------------------------------------------


def handbook_dir() -> Path | None:
    """$WORKSPACE/handbook, else ./handbook, if it exists."""
    candidates = []
    if os.environ.get("WORKSPACE"):
        candidates.append(Path(os.environ["WORKSPACE"]) / "handbook")
    candidates.append(Path.cwd() / "handbook")
    for cand in candidates:
        if cand.is_dir():
            return cand
    return None


def handbook_files(root: Path) -> list[str]:
    """Handbook files relative to the handbook folder, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def find_handbook_file(root: Path, topic: str) -> Path | None:
    """A handbook file named by `topic` (relative path, file name, or stem), if one matches."""
    topic = topic.removeprefix("handbook/")
    files = handbook_files(root)
    for rel in files:
        if topic == rel:
            return root / rel
    for rel in files:
        p = Path(rel)
        if topic in (p.name, p.stem):
            return root / rel
    return None


def resolve_ref(spec: dict[str, Any], node: Any, depth: int = 0) -> Any:
    """Follow `$ref` into components (bounded depth against cycles)."""
    while isinstance(node, dict) and "$ref" in node and depth < 20:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return node
        target: Any = spec
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = target
        depth += 1
    return node


def type_label(spec: dict[str, Any], schema: Any) -> str:
    """A short type for a schema: `string`, `integer|null`, `array of object`, `one of a,b`."""
    schema = resolve_ref(spec, schema)
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "one of " + ",".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return f"= {schema['const']}"
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            labels = []
            for sub in schema[combo]:
                label = type_label(spec, sub)
                if label not in labels:
                    labels.append(label)
            return "|".join(labels)
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if t == "array":
        return "array of " + type_label(spec, schema.get("items", {}))
    if t == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    return str(t or "object")


def strip_optional(spec: dict[str, Any], schema: Any) -> Any:
    """`anyOf: [X, null]` -> X (resolved); anything else resolved as is."""
    schema = resolve_ref(spec, schema)
    if isinstance(schema, dict):
        for combo in ("anyOf", "oneOf"):
            branches = [resolve_ref(spec, b) for b in schema.get(combo, [])]
            real = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
            if len(real) == 1:
                return real[0]
    return schema


def object_fields(spec: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """Fields of an object schema: name -> type text, or, for a list of objects (invoice lines,
    PO lines), name -> {"type": ..., "fields": {...}} so the agent sees what a line holds."""
    required = set(schema.get("required", []))
    out: dict[str, Any] = {}
    for name, sub in schema.get("properties", {}).items():
        label = type_label(spec, sub) + (", required" if name in required else "")
        inner = strip_optional(spec, sub)
        desc = (sub.get("description") if isinstance(sub, dict) else None) or (
            inner.get("description") if isinstance(inner, dict) and inner.get("type") != "object" else None)
        if desc:
            label += f" - {' '.join(str(desc).split())}"
        if isinstance(inner, dict) and inner.get("type") == "array":
            inner = strip_optional(spec, inner.get("items", {}))
        if depth < 2 and isinstance(inner, dict) and isinstance(inner.get("properties"), dict):
            out[name] = {"type": label, "fields": object_fields(spec, inner, depth + 1)}
        else:
            out[name] = label
    return out


def body_fields(spec: dict[str, Any], op: dict[str, Any]) -> dict[str, Any] | None:
    """The request body's fields: name -> type, with `, required` where required."""
    body = resolve_ref(spec, op.get("requestBody"))
    if not isinstance(body, dict):
        return None
    content = body.get("content", {})
    media = content.get("application/json") or next(iter(content.values()), None)
    if not isinstance(media, dict):
        return None
    # An optional body is `anyOf: [Model, null]`: show the model's fields.
    schema = strip_optional(spec, media.get("schema", {}))
    if not isinstance(schema, dict):
        return None
    if not isinstance(schema.get("properties"), dict):
        return {"(body)": type_label(spec, schema)}
    return object_fields(spec, schema)


def route_entries(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per (method, path) of the OpenAPI document, in path order."""
    entries = []
    for path, item in sorted(spec.get("paths", {}).items()):
        if not isinstance(item, dict):
            continue
        shared_params = item.get("parameters", [])
        for method in ("get", "post", "patch", "put", "delete"):
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            entry: dict[str, Any] = {"method": method.upper(), "path": path}
            summary = op.get("summary") or (op.get("description") or "").strip().split("\n")[0]
            if summary:
                entry["summary"] = summary
            query = {}
            for param in [*shared_params, *op.get("parameters", [])]:
                param = resolve_ref(spec, param)
                if isinstance(param, dict) and param.get("in") == "query":
                    query[param.get("name", "?")] = type_label(spec, param.get("schema", {})) + (
                        ", required" if param.get("required") else ""
                    )
            if query:
                entry["query"] = query
            fields = body_fields(spec, op)
            if fields:
                entry["body"] = fields
            if op.get("tags"):
                entry["tags"] = op["tags"]
            entries.append(entry)
    return entries


def matches(entry: dict[str, Any], word: str) -> bool:
    """Case-insensitive match of a word anywhere in a route entry (path, summary, fields, tags)."""
    return word.lower() in json.dumps(entry, ensure_ascii=False).lower()


def cmd_docs(args: list[str]) -> int:
    """docs [WORD | FILE]"""
    reject_unknown_options(args)
    if len(args) > 1:
        raise UsageError("usage: erp docs [WORD | handbook FILE]")
    topic = args[0] if args else None
    hb = handbook_dir()
    if topic and hb is not None:
        found = find_handbook_file(hb, topic)
        if found is not None:
            sys.stdout.write(found.read_text(encoding="utf-8", errors="replace"))
            return EXIT_OK
    client = client_from_env(need_token=False)
    answer = client.request("GET", "/openapi.json", auth=False)
    if not answer.ok or not isinstance(answer.body, dict):
        return show(answer, "GET", "/openapi.json")
    routes: list[Any] = route_entries(answer.body)
    if topic:
        routes = [r for r in routes if matches(r, topic)]
    else:
        # The whole API in detail is too long to read; one line per route, details by word.
        routes = [f"{r['method']} {r['path']}" + (f"  - {r['summary']}" if r.get("summary") else "") for r in routes]
    out: dict[str, Any] = {}
    if topic:
        out["topic"] = topic
    out["conventions"] = [
        "Authorization: Bearer $ERP_TOKEN on every call; answers are {business_date, data}.",
        "Lists: data = {items, total, offset, limit}; use offset= and limit= (default 200, max 1000).",
        "Writes are POSTs to named actions; send --key KEY (Idempotency-Key) to make a retry safe.",
        "Errors are problem JSON {status, code, detail}; 409 = refused by a control, 422 = bad input.",
    ]
    out["routes"] = routes
    if not topic:
        out["details"] = "erp docs WORD shows the query and body fields of every route mentioning WORD"
    if hb is not None:
        files = handbook_files(hb)
        if topic:
            files = [f for f in files if topic.lower() in f.lower()] or files
        out["handbook"] = {"dir": str(hb), "files": files, "read": "erp docs FILE"}
    if topic and not routes:
        note(f"no route mentions {topic!r}; erp docs lists them all")
    emit_json(out)
    return EXIT_OK


# -- entry point --------------------------------------------------------------------------------


def run(argv: Sequence[str]) -> int:
    """Run one erp command line; return the exit status."""
    args = list(argv)
    if not args or args[0] in ("help", "-h", "--help"):
        # `erp help` is an answer (stdout, 0); a bare `erp` is a usage error (stderr, 2).
        (sys.stdout if args else sys.stderr).write(HELP)
        return EXIT_OK if args else EXIT_USAGE
    command = args.pop(0)
    if command == "whoami":
        return cmd_simple_get("/whoami", args)
    if command == "docs":
        return cmd_docs(args)
    if command in ("get", "post", "patch", "put", "delete"):
        return cmd_request(command.upper(), args)
    if command == "inbox":
        return cmd_inbox(args)
    if command == "read":
        return cmd_read(args)
    if command == "attachment":
        return cmd_attachment(args)
    if command == "report":
        return cmd_report(args)
    raise UsageError(f"unknown command {command!r}; erp help lists the commands")


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The `erp` console script."""
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        note(str(exc))
        code = EXIT_USAGE
    except ValueError as exc:  # e.g. a URL given where a path belongs
        note(str(exc))
        code = EXIT_USAGE
    except ErpUnreachable as exc:
        if exc.timed_out:
            note(f"the ERP at {exc.url} did not answer: {exc.reason}")
        else:
            note(f"the ERP is unreachable at {exc.url} (ERP_URL): {exc.reason}")
        code = EXIT_HTTP
    except BrokenPipeError:
        code = EXIT_OK
    raise SystemExit(code)


if __name__ == "__main__":
    main()
