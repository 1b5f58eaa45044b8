"""Runs OpenMined PSI (PyPI `openmined-psi`) on the same set sizes as `tacit bench psi`
and prints JSON: setup (server precomputation), request, process, intersection times.

Usage: python openmined_psi.py --ids M --contacts N [--runs R] [--structure raw|gcs|bloom]
"""
import argparse
import json
import statistics
import time

import private_set_intersection.python as psi


def one_run(m, n, structure, fpr):
    server_items = [f"1555{i:07d}" for i in range(n)]
    client_items = [f"1555{(i * 7) % n:07d}" if i % 2 == 0 else f"other-{i}@example.org" for i in range(m)]
    ds = {"raw": psi.DataStructure.RAW, "gcs": psi.DataStructure.GCS, "bloom": psi.DataStructure.BLOOM_FILTER}[structure]
    c = psi.client.CreateWithNewKey(True)
    s = psi.server.CreateWithNewKey(True)
    t0 = time.perf_counter()
    setup = s.CreateSetupMessage(fpr, len(client_items), server_items, ds)
    t1 = time.perf_counter()
    request = c.CreateRequest(client_items)
    t2 = time.perf_counter()
    response = s.ProcessRequest(request)
    t3 = time.perf_counter()
    found = c.GetIntersection(setup, response)
    t4 = time.perf_counter()
    return {
        "setup_ms": (t1 - t0) * 1e3,
        "client_request_ms": (t2 - t1) * 1e3,
        "server_process_ms": (t3 - t2) * 1e3,
        "client_intersection_ms": (t4 - t3) * 1e3,
        "total_ms": (t4 - t0) * 1e3,
        "setup_bytes": len(setup.SerializeToString()),
        "request_bytes": len(request.SerializeToString()),
        "response_bytes": len(response.SerializeToString()),
        "intersection_size": len(found),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", type=int, default=10)
    ap.add_argument("--contacts", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--structure", default="raw", choices=["raw", "gcs", "bloom"])
    ap.add_argument("--fpr", type=float, default=2.0**-40)
    a = ap.parse_args()
    runs = [one_run(a.ids, a.contacts, a.structure, a.fpr) for _ in range(a.runs)]
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out.update({"library": "openmined-psi", "structure": a.structure, "m": a.ids, "n": a.contacts,
                "fpr": a.fpr, "runs": a.runs, "security": "semi-honest"})
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
