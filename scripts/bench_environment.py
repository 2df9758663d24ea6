#!/usr/bin/env python3
"""How soon a booking's environment profile is usable on its node: a `berth agent --simulate`
against a running portal (e.g. `scripts/run.sh`), with a profile that installs a package from a
wheel built here (no network), sets a variable and places a dotfile.

    sudo scripts/bench_environment.py [BERTH_BINARY] [PORTAL_URL]

Needs root: it makes a Unix user for the holder (builds run as the holder) and removes it at the
end. Run from the portal's directory (it uses `berth node add`, `user add`, `token create` and
`credits grant` there); the portal's `prepare_ahead_minutes` must be at least 15 (default 30).
Books the next 15-minute slot and waits for its start (up to 15 minutes):
- build: booking answered → the node reports the environment ready (built ahead of the start);
- cached: a second booking with the same profile on the node → reported ready from the cache;
- start: the lease's start → the holder's login environment carries the profile (`VIRTUAL_ENV`).
"""
import json, os, pwd, subprocess, sys, tempfile, time, urllib.request, zipfile
from datetime import datetime, timedelta, timezone

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/berth")
portal = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:3000"
tag = str(int(time.time()))
login = f"benv{tag}"
run = lambda *args: subprocess.run([binary, *args], capture_output=True, text=True, check=True).stdout
token_of = lambda out: next(w for w in out.split() if w.startswith("berth_"))

subprocess.run(["useradd", "-m", "-s", "/bin/sh", login], check=True)
node_token = token_of(run("node", "add", f"benv-{tag}", "--accept-new-gpus"))
email = f"{login}@example.org"
run("user", "add", email)
run("credits", "grant", email, "1000000", "--reason", "environment bench")
user_token = token_of(run("token", "create", email, "--name", "bench"))


def api(method, path, body=None):
    req = urllib.request.Request(portal + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {user_token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as res:
        return json.load(res)


def ready(reservation):
    while True:
        env = api("GET", f"/api/v1/reservations/{reservation}/access")["environment"]
        if env and env["state"] in ("ready", "failed"):
            return env
        time.sleep(0.05)


with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    wheel = os.path.join(tmp, "benchpkg-1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("benchpkg/__init__.py", "VALUE = 1\n")
        z.writestr("benchpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: benchpkg\nVersion: 1.0\n")
        z.writestr("benchpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("benchpkg-1.0.dist-info/RECORD", "")
    os.chmod(wheel, 0o644)
    env_dir = os.path.join(tmp, "leases")
    agent = subprocess.Popen([binary, "agent", "--portal", portal, "--simulate", "--interval", "1",
                              "--state-dir", os.path.join(tmp, "state"), "--env-dir", env_dir,
                              "--env-cache-dir", os.path.join(tmp, "cache"), "--python", "/usr/bin/python3"],
                             env={**os.environ, "BERTH_AGENT_TOKEN": node_token, "BERTH_LOG": "warn"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        gpus = []
        while len(gpus) < 2:
            time.sleep(0.5)
            gpus = [g["id"] for g in api("GET", "/api/v1/gpus") if g["node"] == f"benv-{tag}"]
        profile = api("POST", "/api/v1/profiles", {
            "name": "bench", "packages": [wheel],
            "variables": [{"name": "BENCH", "value": "1"}],
            "dotfiles": [{"path": ".benchrc", "content": "x\n"}]})
        now = datetime.now(timezone.utc)
        start = now.replace(minute=now.minute // 15 * 15, second=0, microsecond=0) + timedelta(minutes=15)
        time.sleep(2)  # the agent's first long poll is waiting
        first = api("POST", "/api/v1/reservations", {"gpu_ids": [gpus[0]], "start": start.isoformat(),
                                                      "end": (start + timedelta(minutes=15)).isoformat(),
                                                      "profile": profile["id"]})
        answered = time.time()
        env = ready(first["id"])
        print(f"build: {env['state']} {time.time() - answered:.2f} s after the booking was answered (cached: {env['cached']})")
        second = api("POST", "/api/v1/reservations", {"gpu_ids": [gpus[1]], "start": start.isoformat(),
                                                       "end": (start + timedelta(minutes=15)).isoformat(),
                                                       "profile": profile["id"]})
        answered = time.time()
        env = ready(second["id"])
        print(f"cached: {env['state']} {1000 * (time.time() - answered):.0f} ms after the booking was answered (cached: {env['cached']})")
        file = os.path.join(env_dir, f"{login}.env")
        print(f"waiting for the start at {start.isoformat()}")
        while not (os.path.exists(file) and "VIRTUAL_ENV" in open(file).read()):
            time.sleep(0.005)
        print(f"start: the login environment carries the profile {1000 * (time.time() - start.timestamp()):.0f} ms after the start")
    finally:
        agent.terminate()
        agent.wait()
        subprocess.run(["userdel", "-r", "-f", login], capture_output=True)
