#!/usr/bin/env python3
"""Workspace save and restore throughput: a 1 GiB workspace (100 files of ~10 MiB of random
bytes), saved, 1 % changed (one file rewritten), saved again, then restored on a "node" that has
the previous version and on one that has nothing. Starts its own portal (`berth serve` on a
temporary SQLite database and directory store) and runs `berth agent workspace save|restore`
exactly as the node agent does, with the lease's workspace token.

    scripts/bench_workspace.py [BERTH_BINARY] [SIZE_MIB]

Prints one line per step with its time and what moved.
"""
import base64, hashlib, hmac, json, os, secrets, sqlite3, subprocess, sys, tempfile, time
import urllib.request
from datetime import datetime, timedelta, timezone

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/berth")
size_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
files = 100
port = 3997
portal = f"http://127.0.0.1:{port}"

with tempfile.TemporaryDirectory() as tmp:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
    env.update(BERTH_DATA_DIR=os.path.join(tmp, "data"), BERTH_BIND=f"127.0.0.1:{port}",
               BERTH_LOCAL_AGENT="off", BERTH_LOG="warn")
    run = lambda *args: subprocess.run([binary, *args], capture_output=True, text=True,
                                       check=True, env=env).stdout
    run("migrate")
    server = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(portal + "/healthz")
                break
            except Exception:
                time.sleep(0.1)
        run("user", "add", "bench@example.org")
        run("credits", "grant", "bench@example.org", "1000000", "--reason", "workspace bench")
        out = run("token", "create", "bench@example.org", "--name", "bench")
        token = next(w for w in out.split() if w.startswith("berth_"))

        def api(method, path, body=None):
            req = urllib.request.Request(portal + path, method=method,
                                         data=json.dumps(body).encode() if body else None,
                                         headers={"Authorization": f"Bearer {token}",
                                                  "Content-Type": "application/json"})
            with urllib.request.urlopen(req) as res:
                return json.load(res)

        gpu = api("GET", "/api/v1/gpus")[0]["id"]
        now = datetime.now(timezone.utc)
        start = now.replace(minute=now.minute // 15 * 15, second=0, microsecond=0) + timedelta(minutes=15)
        booking = api("POST", "/api/v1/reservations",
                      {"gpu_ids": [gpu], "start": start.isoformat(),
                       "end": (start + timedelta(minutes=15)).isoformat()})
        # The lease's workspace token, as the portal signs it for the node.
        db = sqlite3.connect(os.path.join(tmp, "data", "berth.db"))
        key = secrets.token_bytes(32)
        db.execute("INSERT INTO portal_keys (name, value) VALUES ('workspace_tokens', ?) "
                   "ON CONFLICT DO NOTHING", (base64.b64encode(key).decode(),))
        db.commit()
        key = base64.b64decode(db.execute(
            "SELECT value FROM portal_keys WHERE name = 'workspace_tokens'").fetchone()[0])
        owner = db.execute("SELECT owner_id FROM reservations WHERE id = ?",
                           (booking["id"],)).fetchone()[0]
        mac = hmac.new(key, f"workspace:{booking['id']}:{owner}".encode(), hashlib.sha256)
        ws_env = dict(env, BERTH_WORKSPACE_TOKEN=f"bws1.{booking['id']}.{mac.hexdigest()}",
                      BERTH_AGENT_PORTAL=portal)

        def workspace(what, directory):
            started = time.monotonic()
            out = subprocess.run([binary, "agent", "workspace", what, "--dir", directory],
                                 capture_output=True, text=True, env=ws_env)
            took = time.monotonic() - started
            if out.returncode != 0:
                sys.exit(f"{what} failed: {out.stderr}")
            return took, json.loads(out.stdout)

        work = os.path.join(tmp, "node-a", "berth-workspace")
        os.makedirs(work)
        per_file = size_mib * 1024 * 1024 // files
        for i in range(files):
            with open(os.path.join(work, f"shard-{i:03}.bin"), "wb") as f:
                f.write(os.urandom(per_file))
        took, saved = workspace("save", work)
        print(f"first save     {took:6.2f} s  {saved['bytes'] / 2**20:7.1f} MiB, "
              f"{saved['uploaded_chunks']} of {saved['chunks']} chunks uploaded "
              f"({saved['bytes'] / 2**20 / took:.0f} MiB/s)")
        # Node B holds the first version.
        node_b = os.path.join(tmp, "node-b", "berth-workspace")
        took, restored = workspace("restore", node_b)
        print(f"full restore   {took:6.2f} s  {restored['downloaded_chunks']} chunks, "
              f"{restored['downloaded_bytes'] / 2**20:.1f} MiB downloaded")
        # 1 % changes on node A.
        with open(os.path.join(work, "shard-042.bin"), "wb") as f:
            f.write(os.urandom(per_file))
        took, saved = workspace("save", work)
        print(f"1 % changed    {took:6.2f} s  {saved['uploaded_chunks']} of {saved['chunks']} "
              f"chunks uploaded ({saved['uploaded_bytes'] / 2**20:.1f} MiB)")
        took, restored = workspace("restore", node_b)
        print(f"restore on B   {took:6.2f} s  {restored['downloaded_chunks']} chunks "
              f"({restored['downloaded_bytes'] / 2**20:.1f} MiB) downloaded, "
              f"{restored['local_chunks']} from the copy there")
        node_c = os.path.join(tmp, "node-c", "berth-workspace")
        took, restored = workspace("restore", node_c)
        print(f"restore on C   {took:6.2f} s  {restored['downloaded_chunks']} chunks "
              f"({restored['downloaded_bytes'] / 2**20:.1f} MiB) downloaded to an empty node")
    finally:
        server.terminate()
        server.wait()
