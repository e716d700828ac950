"""Schemathesis against Confetti: for each principal (a guest, the organiser) a server with a fresh
data directory and SQLite database, an event with that principal's token, and `st run` on the
document it serves with the response-schema, status-code, content-type and server-error checks.
Prints the cases and failures of each run; exits non-zero when a run fails.

Usage: fuzz.py CONFETTI_BIN ST_BIN (scripts/contract.sh)."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ADMIN_TOKEN = "contract-fuzz-admin-token"
CHECKS = "response_schema_conformance,status_code_conformance,content_type_conformance,not_a_server_error"
# The live stream stays open until the client leaves: a request to it never ends, so it is left
# out here (its answer's schema is checked in tests/openapi.rs, its events in tests/api.rs).
EXCLUDED = ["liveEvents"]
EXAMPLES = os.environ.get("CONTRACT_FUZZ_EXAMPLES", "100")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


class Server:
    def __init__(self, binary, name):
        self.data_dir = tempfile.mkdtemp(prefix="confetti-fuzz-")
        self.base = f"http://127.0.0.1:{free_port()}"
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(
            CONFETTI_DATA_DIR=self.data_dir,
            CONFETTI_PUBLIC_URL=self.base,
            CONFETTI_ADMIN_TOKEN=ADMIN_TOKEN,
            CONFETTI_MIN_FREE_BYTES="0",
        )
        os.makedirs("tests/contract/output", exist_ok=True)
        self.log = open(f"tests/contract/output/fuzz-{name}.log", "w")
        bind = self.base.removeprefix("http://")
        self.process = subprocess.Popen(
            [binary, "serve", "--bind", bind, "--no-demo"], env=env, stdout=self.log, stderr=self.log
        )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"confetti exited with {self.process.returncode}; see {self.log.name}")
            try:
                urllib.request.urlopen(self.base + "/healthz", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("confetti did not become healthy in 30 s")
                time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def upload(server, slug, token, key):
    """A real photo (made by ffmpeg), uploaded by the guest: its id."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "photo.jpg")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=320x240",
                        "-frames:v", "1", path], check=True)
        photo = open(path, "rb").read()
    boundary = "confetti-fuzz-boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"client_upload_id\"\r\n\r\n{key}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo.jpg\"\r\n"
            "Content-Type: image/jpeg\r\n\r\n").encode() + photo + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"{server.base}/api/v1/events/{slug}/uploads", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["id"]


def principal_on(server, principal):
    """An event with a guest's photo, and the token of `principal`: the token and the ids to test with."""
    event = call(server.base, "POST", "/api/v1/events", {"name": "Fuzz", "organiser_password": "correct horse"}, ADMIN_TOKEN)
    slug = event["slug"]
    joined = call(server.base, "POST", f"/api/v1/events/{slug}/guests",
                  {"join_token": event["join_token"], "display_name": "Fuzz"})
    key = "0190a5a8-5e2b-7c3d-8e4f-1a2b3c4d5e6f"
    ids = {"CONTRACT_SLUG": slug, "CONTRACT_UPLOAD_ID": upload(server, slug, joined["token"], key),
           "CONTRACT_CLIENT_UPLOAD_ID": key}
    if principal == "guest":
        return joined["token"], ids
    login = call(server.base, "POST", f"/api/v1/events/{slug}/organiser-sessions", {"password": "correct horse"})
    return login["token"], ids


def run(binary, st, principal):
    server = Server(binary, principal)
    try:
        token, ids = principal_on(server, principal)
        report = os.path.abspath(f"tests/contract/output/schemathesis-{principal}.json")
        command = [
            st, "--no-color", "--config-file", "tests/contract/schemathesis.toml", "run", f"{server.base}/api/v1/openapi.json",
            "--checks", CHECKS,
            "--header", f"Authorization: Bearer {token}",
            "--max-examples", EXAMPLES,
            "--seed", "27",
            "--request-timeout", "30",
            "--workers", "2",
            "--phases", "examples,coverage,fuzzing,stateful",
            "--report", "ndjson",
            "--report-ndjson-path", report,
        ]
        for operation in EXCLUDED:
            command += ["--exclude-operation-id", operation]
        print(f"-- as the {principal} ({', '.join(EXCLUDED)} left out: an open stream)", flush=True)
        completed = subprocess.run(command, text=True, capture_output=True, env={**os.environ, **ids})
        print(completed.stdout[-6000:], flush=True)
        if completed.stderr.strip():
            print(completed.stderr[-3000:], file=sys.stderr, flush=True)
        summary = [line for line in completed.stdout.splitlines() if re.search(r"passed|failed|cases|generated", line)]
        return completed.returncode, summary
    finally:
        server.stop()


def main():
    binary, st = sys.argv[1], sys.argv[2]
    failed = False
    for principal in ("guest", "organiser"):
        code, summary = run(binary, st, principal)
        print(f"schemathesis as the {principal}: exit {code}; " + " | ".join(s.strip() for s in summary[-4:]), flush=True)
        failed |= code != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
