#!/usr/bin/env python3
"""How soon a lease opens and closes on a node: a release `berth agent --simulate` against a
running portal (e.g. `scripts/run.sh`), timed from the moment it should happen to the moment the
holder's lease file appears or goes (the agent writes it when it opens the lease's access).

    scripts/bench_lease_timing.py [BERTH_BINARY] [PORTAL_URL]

Run from the portal's directory (it uses `berth node add`, `user add`, `token create` and
`credits grant` there). Books, for a new user, the current 15-minute slot on a simulated GPU and
waits for its end (up to 15 minutes):
- push: booking answered → lease file written (the schedule's long poll, then the keeper);
- close: the lease's end → lease file removed (the agent's own clock).
"""
import json, os, subprocess, sys, tempfile, time, urllib.request
from datetime import datetime, timedelta, timezone

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/berth")
portal = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:3000"
tag = str(int(time.time()))
run = lambda *args: subprocess.run([binary, *args], capture_output=True, text=True, check=True).stdout
token_of = lambda out: next(w for w in out.split() if w.startswith("berth_"))

node_token = token_of(run("node", "add", f"bench-{tag}", "--accept-new-gpus"))
email = f"bench{tag}@example.org"
run("user", "add", email)
run("credits", "grant", email, "1000000", "--reason", "lease timing bench")
user_token = token_of(run("token", "create", email, "--name", "bench"))

def api(method, path, body=None):
    req = urllib.request.Request(portal + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {user_token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as res:
        return json.load(res)

with tempfile.TemporaryDirectory() as tmp:
    env_dir = os.path.join(tmp, "leases")
    agent = subprocess.Popen([binary, "agent", "--portal", portal, "--simulate", "--interval", "1",
                              "--state-dir", os.path.join(tmp, "state"), "--env-dir", env_dir],
                             env={**os.environ, "BERTH_AGENT_TOKEN": node_token, "BERTH_LOG": "warn"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        gpu = None
        while gpu is None:
            time.sleep(0.5)
            gpu = next((g["id"] for g in api("GET", "/api/v1/gpus") if g["node"] == f"bench-{tag}"), None)
        me = api("GET", "/api/v1/me/access")
        file = os.path.join(env_dir, f"{me['login']}.env")
        now = datetime.now(timezone.utc)
        start = now.replace(minute=now.minute // 15 * 15, second=0, microsecond=0)
        end = start + timedelta(minutes=15)
        time.sleep(2)  # the agent's first long poll is waiting
        booked = api("POST", "/api/v1/reservations", {"gpu_ids": [gpu], "start": start.isoformat(), "end": end.isoformat()})
        answered = time.time()
        while not os.path.exists(file):
            time.sleep(0.005)
        print(f"push: lease file {1000 * (time.time() - answered):.0f} ms after the booking was answered (reservation {booked['id']})")
        while os.path.exists(file):
            time.sleep(0.005)
        print(f"close: lease file removed {1000 * (time.time() - end.timestamp()):.0f} ms after the end ({end.isoformat()})")
    finally:
        agent.terminate()
        agent.wait()
