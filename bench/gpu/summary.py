#!/usr/bin/env python3
"""The short table of bench/gpu/run.sh: the issue's three figures, before and after."""
import json, os, sys

out = sys.argv[1]

def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        return None

rows = []
for bin in ["tacit-base", "tacit"]:
    b = load(f"{bin}-backends.json")
    a = load(f"{bin}-auth.json")
    if b:
        s = b["shapes"][0]
        dev = s["gpu_device_queries_per_s"]
        e2e = s["gpu_queries_per_s"]
        rows.append((bin, "end to end q/s (best batch)", f"{e2e:,.0f} @ {s['gpu_best_batch']}"))
        rows.append((bin, "device q/s", f"{dev:,.0f}"))
        rows.append((bin, "end to end / device", f"{e2e / dev:.2f}"))
        if "gpu_wire_queries_per_s" in s:
            rows.append((bin, "wire to wire q/s / device", f"{s['gpu_wire_queries_per_s']:,.0f} / {s['wire_throughput_vs_device']:.2f}"))
            rows.append((bin, "copies GB/s in/out/both; host copy", f"{s['gpu_h2d_gb_per_s']:.1f}/{s['gpu_d2h_gb_per_s']:.1f}/{s['gpu_duplex_gb_per_s']:.1f}; {s['host_copy_gb_per_s']:.1f}"))
            rows.append((bin, "device q/s at the chunk", f"{s['gpu_device_chunk_queries_per_s']:,.0f} @ {s['gpu_chunk']}"))
        rows.append((bin, "gemm floor q/s", f"{s['gpu_gemm_floor_queries_per_s']:,.0f}"))
        rows.append((bin, "one query ms / table read ms", f"{s['gpu_latency_ms']:.4f} / {s['gpu_scan_floor_ms']:.4f} = {s['latency_vs_scan_floor']:.3f}"))
        rows.append((bin, "one query on the device ms", f"{s['gpu_latency_device_ms']:.4f}"))
        if "gpu_launch_floor_ms" in s:
            rows.append((bin, "launch / query in / answer out ms", f"{s['gpu_launch_floor_ms']:.4f} / {s['gpu_h2d_one_query_ms']:.4f} / {s['gpu_d2h_one_answer_ms']:.4f}; floor {s['gpu_latency_floor_ms']:.4f}"))
        for x in s["batches"]:
            rows.append((bin, f"  batch {x['batch']}", f"{x['queries_per_s']:,.0f} e2e, {x['device_queries_per_s']:,.0f} dev"))
    if a:
        rows.append((bin, "auth/s (best)", f"{a['auth_per_s']:,.0f}"))
        for l in a["load"]:
            extra = ""
            if "cpu_us_per_session" in l:
                extra = f"; cpu {l['cpu_us_per_session']:.1f} us/session (stage {l['stage_cpu_us_per_session']:.1f}, finish {l['finish_cpu_us_per_session']:.1f}, mac {l['mac_cpu_us_per_session']:.1f}); host bound {l['host_bound_auth_per_s']:,.0f} ({l['auth_per_s_vs_host_bound']:.2f}x); wait {l['wait_ms_per_pass']:.1f} ms/pass"
            rows.append((bin, f"  batch {l['batch']}", f"{l['auth_per_s']:,.0f} auth/s, pass {l['pass_ms']:.1f} ms, pir {l['pir_ms']:.1f} ms, mac {l['other_ms']:.2f} ms{extra}"))
        if a.get("per_session_us"):
            rows.append((bin, "per session us", json.dumps(a["per_session_us"].get("median_us"))))
        rows.append((bin, "table create s", f"{a.get('table_create_s')}"))
for r in rows:
    print(f"{r[0]:<11} {r[1]:<38} {r[2]}")
