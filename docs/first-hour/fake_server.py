"""A scripted OpenAI-compatible endpoint for the acceptance cases: MODE=ok|refuse_key|one_model."""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode, port = sys.argv[1], int(sys.argv[2])
ANSWER = json.dumps({"action": "tool", "tool": "gsm8k", "confidence": 0.9, "synthesize_kind": "none", "reason": "word problem"})
seen = []

class H(BaseHTTPRequestHandler):
    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def _auth(self):
        if mode == "refuse_key":
            self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}); return False
        return True
    def do_GET(self):
        if not self._auth(): return
        if self.path.endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "smollm2-fake", "object": "model"}]})
        else:
            self._send(404, {"error": "not found"})
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); body = json.loads(self.rfile.read(n))
        with open(f"requests-{port}.log", "a") as f: f.write(json.dumps({"model": body.get("model"), "auth": self.headers.get("Authorization")}) + "\n")
        if not self._auth(): return
        if body.get("model") != "smollm2-fake":
            self._send(404, {"error": {"message": f"model {body.get('model')!r} not found"}}); return
        self._send(200, {"model": "smollm2-fake", "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
    def log_message(self, *a): pass

ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
