# compaction-sim's Python summarizer worker (embedded in the binary, run with `python -c`).
#
# Protocol 1, JSON lines. argv[1] is {"protocol": 1, "ref": REF, "package": DIR or null}.
# The first line the worker writes is the handshake:
#   {"protocol": 1, "ok": true, "adk_version": "2.13.0", "summarizer": "module.Class"}
#   {"protocol": 1, "ok": false, "kind": "no-adk" | "ref", "error": "..."}
# then, per request line {"id": N, "events": [ADK Event JSON, ...]}, one response line:
#   {"id": N, "ok": true, "text": "..." or null, "json_chars": N or null}
#   {"id": N, "ok": false, "error": "ExceptionType: message"}
# Anything the user's code prints goes to stderr: stdout carries the protocol only.
import asyncio
import importlib
import importlib.util
import json
import os
import sys

PROTOCOL = 1


def _one_line(text, limit=500):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class RefError(Exception):
    pass


def _load(ref, package, base):
    """Resolve REF by the plugin rules: `path/file.py:NAME`, `package.module:NAME`, or a dotted
    path whose last part is the name (a leading dot is relative to the target's package)."""
    if ":" in ref:
        where, name = ref.rsplit(":", 1)
    else:
        where, _, name = ref.rpartition(".")
    if not name:
        raise RefError(f"`{ref}` names no object (expected MODULE:NAME or a dotted path)")
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = os.path.abspath(where)
            if not os.path.isfile(path):
                raise RefError(f"`{ref}` does not import: no file {where}")
            mod_name = os.path.splitext(os.path.basename(path))[0]
            spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            sys.path.insert(0, os.path.dirname(path))
            spec.loader.exec_module(module)
        elif where.startswith("."):
            if not package:
                raise RefError(
                    f"`{ref}` is relative to the target's package: give --package DIR")
            pkg_dir = os.path.abspath(package)
            if not os.path.isdir(pkg_dir):
                raise RefError(f"`{ref}` does not import: --package {package} is not a folder")
            sys.path.insert(0, os.path.dirname(pkg_dir))
            module = importlib.import_module(where, package=os.path.basename(pkg_dir))
        else:
            if not where:
                raise RefError(f"`{ref}` names no module (expected MODULE:NAME or a dotted path)")
            if package:
                sys.path.insert(0, os.path.abspath(package))
            module = importlib.import_module(where)
    except RefError:
        raise
    except BaseException as e:  # SyntaxError, ImportError, anything the module raises
        raise RefError(f"`{ref}` does not import: {type(e).__name__}: {_one_line(e)}")
    try:
        obj = getattr(module, name)
    except AttributeError:
        raise RefError(f"`{ref}` does not import: module `{module.__name__}` has no `{name}`")
    if isinstance(obj, type):
        if not issubclass(obj, base):
            raise RefError(f"`{ref}` names something that is not a BaseEventsSummarizer "
                           f"(the class {obj.__qualname__})")
        try:
            obj = obj()
        except BaseException as e:
            raise RefError(f"`{ref}`: the class could not be built with no arguments: "
                           f"{type(e).__name__}: {_one_line(e)}")
    if not isinstance(obj, base):
        raise RefError(f"`{ref}` names something that is not a BaseEventsSummarizer "
                       f"(an object of type {type(obj).__name__})")
    return obj


def main():
    # Our channel is a private copy of stdout; fd 1 and sys.stdout become stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj):
        out.write(json.dumps(obj, ensure_ascii=True, allow_nan=True) + "\n")
        out.flush()

    config = json.loads(sys.argv[1])
    try:
        import google.adk
        from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
        from google.adk.events.event import Event
    except BaseException as e:
        send({"protocol": PROTOCOL, "ok": False, "kind": "no-adk",
              "error": f"{type(e).__name__}: {_one_line(e)}"})
        return
    try:
        summarizer = _load(config["ref"], config.get("package"), BaseEventsSummarizer)
    except RefError as e:
        send({"protocol": PROTOCOL, "ok": False, "kind": "ref", "error": str(e)})
        return
    cls = type(summarizer)
    send({"protocol": PROTOCOL, "ok": True,
          "adk_version": getattr(google.adk, "__version__", "unknown"),
          "summarizer": f"{cls.__module__}.{cls.__qualname__}"})
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        rid = req.get("id")
        try:
            events = [Event.model_validate(e) for e in req["events"]]
        except Exception as e:
            send({"id": rid, "ok": False,
                  "error": f"the span is not valid ADK events: {_one_line(e)}"})
            continue
        try:
            result = loop.run_until_complete(
                summarizer.maybe_summarize_events(events=events))
        except Exception as e:  # ADK 2.12+ catches Exception: a failed call
            send({"id": rid, "ok": False, "error": f"{type(e).__name__}: {_one_line(e)}"})
            continue
        if result is None:
            send({"id": rid, "ok": True, "text": None, "json_chars": None})
            continue
        compaction = getattr(getattr(result, "actions", None), "compaction", None)
        content = getattr(compaction, "compacted_content", None)
        if content is None:
            send({"id": rid, "ok": False,
                  "error": "returned no actions.compaction.compacted_content "
                           f"(a {type(result).__name__})"})
            continue
        text = "".join(p.text for p in content.parts or []
                       if p.text is not None and not p.thought)
        send({"id": rid, "ok": True, "text": text,
              "json_chars": len(content.model_dump_json(exclude_none=True))})


main()
