#!/usr/bin/env python3
"""Times `berth agent authorized-keys` (sshd's AuthorizedKeysCommand, run on every SSH login)
against a schedule of N leases kept on disk, as a node would hold it.

    scripts/bench_authorized_keys.py [BERTH_BINARY] [LEASES] [RUNS]

Prints p50, p90 and p99 wall times of one call (process start included), for a holder with an
open lease and for a user with none.
"""
import json, os, statistics, subprocess, sys, tempfile, time
from datetime import datetime, timedelta, timezone

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/berth"
leases = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 300

now = datetime.now(timezone.utc)
key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII+h3y9a5OgeFAY+0Rs+KWeJwUN0nR83tzfdPgmSUKmF"
schedule = {
    "version": "bench",
    "leases": [
        {
            "reservation_id": i,
            "login": f"user{i % 300}",
            "keys": [key, key.replace("AAAAI", "AAAAJ")],
            "gpus": [{"uuid": f"GPU-{i:08x}-0000-4000-8000-{j:012x}", "memory_mib": 81559} for j in range(i % 8 + 1)],
            "quarters": [1, 2, 4][i % 3],
            # Spread over the next 24 hours, some open now.
            "start": (now + timedelta(minutes=15 * (i % 96) - 60)).isoformat(),
            "end": (now + timedelta(minutes=15 * (i % 96) + 60)).isoformat(),
        }
        for i in range(leases)
    ],
    "admins": [{"login": "ops", "keys": [key]}],
    "intruders": "report",
    "protect_idle": False,
}
with tempfile.TemporaryDirectory() as state:
    with open(os.path.join(state, "leases.json"), "w") as f:
        json.dump({"schedule": schedule, "early_access_seconds": 0}, f)
    for user in ["user0", "nobody-here"]:
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            out = subprocess.run([binary, "agent", "authorized-keys", "--state-dir", state, user],
                                 capture_output=True, check=True)
            times.append((time.perf_counter() - t) * 1000)
        times.sort()
        q = lambda p: times[min(len(times) - 1, int(p * len(times)))]
        lines = len(out.stdout.splitlines())
        print(f"{user:12} {leases} leases: p50 {q(0.5):.2f} ms, p90 {q(0.9):.2f} ms, "
              f"p99 {q(0.99):.2f} ms ({lines} key lines, {runs} runs)")
