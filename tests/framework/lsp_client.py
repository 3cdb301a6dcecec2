"""A small Language Server Protocol client (JSON-RPC over stdio) for the real yaml-language-server.

The editor check of `framework/spec.schema.json` (tests/framework/test_editor_schema.py) drives
the server that VS Code's YAML extension runs, the way an editor does: `initialize`, the
extension's settings (answered when the server asks with `workspace/configuration`), then
`textDocument/didOpen` and the diagnostics the server publishes for it, completion and hover.
The schema is found through each file's `# yaml-language-server: $schema=...` modeline, as in an
editor; SchemaStore is switched off (no network).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

SERVER = "yaml-language-server"
SETTINGS = {
    "yaml": {
        "validate": True,
        "hover": True,
        "completion": True,
        "format": {"enable": False},
        "schemaStore": {"enable": False},
        "schemas": {},
        "customTags": [],
        "maxItemsComputed": 5000,
    },
    "http": {"proxy": "", "proxyStrictSSL": False},
    "editor": {"tabSize": 2, "detectIndentation": True},
    "files": {"associations": {}},
}


def server_command() -> list[str] | None:
    """The command that starts the server over stdio, or None when it is not installed."""
    path = shutil.which(SERVER)
    return [path, "--stdio"] if path else None


class LanguageServer:
    """One server process; `close()` stops it by its process id (always: use it as a context manager)."""

    def __init__(self, root: Path, timeout: float = 60.0) -> None:
        command = server_command()
        if command is None:
            raise FileNotFoundError(f"{SERVER} is not on PATH (npm install -g yaml-language-server@2)")
        self.timeout = timeout
        self._stderr = tempfile.TemporaryFile()  # what the server says on stderr, for failures
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr, cwd=root, env={**os.environ, "NO_PROXY": "*"})
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.diagnostics: dict[str, list[list[dict[str, Any]]]] = {}
        self._published = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        uri = root.resolve().as_uri()
        self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": root.name}],
            "capabilities": {
                "workspace": {"configuration": True},
                "textDocument": {
                    "publishDiagnostics": {},
                    "completion": {"completionItem": {"snippetSupport": False, "documentationFormat": ["markdown", "plaintext"]}},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                },
            },
        })
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})

    # -- the wire ----------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        with self._lock:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                continue
            self._dispatch(json.loads(stream.read(length)))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" in message:  # a request from the server
            result: Any = None
            if message["method"] == "workspace/configuration":
                result = [_setting(item.get("section")) for item in message["params"]["items"]]
            self._send({"id": message["id"], "result": result})
        elif "id" in message:
            self._replies.setdefault(message["id"], queue.Queue()).put(message)
        elif message.get("method") == "textDocument/publishDiagnostics":
            with self._published:
                params = message["params"]
                self.diagnostics.setdefault(params["uri"], []).append(params["diagnostics"])
                self._published.notify_all()

    def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        ident = self._next_id
        replies = self._replies.setdefault(ident, queue.Queue())
        self._send({"id": ident, "method": method, "params": params})
        try:
            reply = replies.get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"{method}: no reply within {self.timeout} s{self.server_output()}") from None
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}{self.server_output()}")
        return reply.get("result")

    def server_output(self) -> str:
        """The end of the server's stderr (to add to an error), with its exit code if it ended."""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace")[-2000:]
        ended = f" (the server exited with {self.process.returncode})" if self.process.poll() is not None else ""
        return f"{ended}; server stderr: {text}" if text or ended else ""

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    # -- what an editor does ----------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        """Open a document (its text on disk, or `text` as if edited unsaved); returns its uri."""
        uri = path.resolve().as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "yaml", "version": 1,
            "text": path.read_text() if text is None else text}})
        return uri

    def close_document(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def wait_diagnostics(self, uri: str) -> list[dict[str, Any]]:
        """The diagnostics the server published for `uri` after it was opened (its first report
        once the schema has loaded)."""
        with self._published:
            if not self._published.wait_for(lambda: uri in self.diagnostics, timeout=self.timeout):
                raise TimeoutError(f"no diagnostics for {uri} within {self.timeout} s{self.server_output()}")
            return self.diagnostics.pop(uri)[-1]

    def completion(self, uri: str, line: int, character: int) -> list[dict[str, Any]]:
        result = self.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                          "position": {"line": line, "character": character}})
        return (result or {}).get("items", []) if isinstance(result, dict) else (result or [])

    def hover(self, uri: str, line: int, character: int) -> str:
        result = self.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                     "position": {"line": line, "character": character}})
        if not result:
            return ""
        contents = result["contents"]
        return contents["value"] if isinstance(contents, dict) else str(contents)

    def close(self) -> None:
        """Shut the server down politely, then make sure its process is gone (by its pid)."""
        try:
            if self.process.poll() is None:
                self.request("shutdown", None)
                self.notify("exit", None)
                self.process.wait(timeout=5)
        except (OSError, RuntimeError, queue.Empty, subprocess.TimeoutExpired):
            pass
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=5)
            self._stderr.close()

    def __enter__(self) -> "LanguageServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _setting(section: str | None) -> Any:
    """The value of one settings section ('yaml', 'yaml.format', 'http', ...)."""
    value: Any = SETTINGS
    for part in (section or "").split("."):
        if part:
            value = value.get(part) if isinstance(value, dict) else None
    return value
