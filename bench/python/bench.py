"""The three speed ratios of issue 29 in one run (see run.sh). Prints a table and the
ratios; writes JSON with every median with --out.

  psi_vs_openmined   tacit.psi whole run / OpenMined PSI whole run      goal <= 0.5
  psi_python_vs_rust tacit.psi whole run / `tacit bench psi` whole run   goal <= 1.1
  paillier           phe+gmpy2 time / tacit.paillier time                goal encrypt >= 5,
                                                                              add >= 5, decrypt >= 1.6
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time


def med(xs):
    return statistics.median(xs)


def psi_sets(m, n):
    # the sets of `tacit bench psi` and bench/openmined_psi.py
    sender = [f"1555{i:07d}" for i in range(n)]
    receiver = [f"1555{(i * 7) % n:07d}" if i % 2 == 0 else f"other-{i}@example.org" for i in range(m)]
    return receiver, sender


def tacit_psi_run(m, n):
    from tacit import psi

    receiver_items, sender_items = psi_sets(m, n)
    t0 = time.perf_counter()
    sender = psi.Sender(sender_items, max_receiver=m, max_sender=n)
    receiver = psi.Receiver(receiver_items, max_receiver=m, max_sender=n)
    found = receiver.intersection(sender.respond(receiver.request()))
    dt = time.perf_counter() - t0
    want = [x for x in receiver_items if x in set(sender_items)]
    assert found == want, (found, want)
    return dt * 1e3


def openmined_run(m, n):
    import private_set_intersection.python as om

    receiver_items, sender_items = psi_sets(m, n)
    t0 = time.perf_counter()
    c = om.client.CreateWithNewKey(True)
    s = om.server.CreateWithNewKey(True)
    setup = s.CreateSetupMessage(2.0 ** -40, len(receiver_items), sender_items, om.DataStructure.RAW)
    request = c.CreateRequest(receiver_items)
    response = s.ProcessRequest(request)
    found = c.GetIntersection(setup, response)
    dt = time.perf_counter() - t0
    assert len(found) == len([x for x in receiver_items if x in set(sender_items)])
    return dt * 1e3


def rust_psi_run(tacit, m, n):
    out = subprocess.run([tacit, "bench", "psi", "--ids", str(m), "--contacts", str(n), "--precompute-runs", "1",
                          "--runs", "11", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["whole_run_ms"]


def paillier_round(values, phe_keys, tacit_keys):
    """One round: encrypt, add, decrypt 200 values in phe (one by one, as phe offers)
    and in tacit (batch functions); returns per-value times in ms and checks results."""
    import phe
    from tacit import paillier

    ppub, ppriv = phe_keys
    pub, priv = tacit_keys
    r = {}
    t = time.perf_counter()
    pe = [ppub.encrypt(v) for v in values]
    r["phe_encrypt"] = time.perf_counter() - t
    t = time.perf_counter()
    te = pub.encrypt_many(values)
    r["tacit_encrypt"] = time.perf_counter() - t
    t = time.perf_counter()
    ps = [a + b for a, b in zip(pe, reversed(pe))]
    r["phe_add"] = time.perf_counter() - t
    t = time.perf_counter()
    ts = paillier.add_many(te, te[::-1])
    r["tacit_add"] = time.perf_counter() - t
    t = time.perf_counter()
    ts1 = [a + b for a, b in zip(te, reversed(te))]
    r["tacit_add_operator"] = time.perf_counter() - t
    t = time.perf_counter()
    pd = [ppriv.decrypt(x) for x in ps]
    r["phe_decrypt"] = time.perf_counter() - t
    t = time.perf_counter()
    td = priv.decrypt_many(ts)
    r["tacit_decrypt"] = time.perf_counter() - t
    # one at a time, as phe: what one core gives (the batch's floor on one core)
    t = time.perf_counter()
    td1 = [priv.decrypt(x) for x in ts1]
    r["tacit_decrypt_one_by_one"] = time.perf_counter() - t
    # results checked equal: the sums, and each library decrypts the other's ciphertexts
    want = [a + b for a, b in zip(values, reversed(values))]
    assert pd == want and td == want and td1 == want
    assert priv.decrypt_many(paillier.from_phe(pe[:5], public_key=pub)) == values[:5]
    assert [ppriv.decrypt(x) for x in paillier.to_phe(te[:5], public_key=ppub)] == values[:5]
    k = len(values)
    return {key: v * 1e3 / k for key, v in r.items()}


def sched():
    """This process's scheduling policy (run.sh runs the bench under `chrt -f 50` when
    it may, so that other processes' builds do not take its cores)."""
    try:
        pol = os.sched_getscheduler(0)
        return {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}.get(pol, str(pol)) + \
            (f" {os.sched_getparam(0).sched_priority}" if pol != os.SCHED_OTHER else "")
    except (AttributeError, OSError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tacit", required=True, help="the release `tacit` binary (for the Rust baseline)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--values", type=int, default=200)
    ap.add_argument("--bits", type=int, default=3072)
    ap.add_argument("--out")
    a = ap.parse_args()

    import gmpy2  # noqa: F401  (phe uses it when installed; fail loudly if it is not)
    import phe
    import phe.util
    from tacit import paillier

    assert phe.util.HAVE_GMP, "phe does not see gmpy2"
    print(f"# {os.cpu_count()} cores; python {sys.version.split()[0]}; {a.rounds} round-robin rounds; "
          f"load average {os.getloadavg()[0]:.2f}; scheduler {sched()}", flush=True)
    load = [os.getloadavg()[0]]

    # PSI, round-robin: tacit via Python, OpenMined via Python, tacit via Rust
    tp, om, tr = [], [], []
    tacit_psi_run(a.m, 100)  # warm-up (imports, thread pool)
    for i in range(a.rounds):
        tp.append(tacit_psi_run(a.m, a.n))
        om.append(openmined_run(a.m, a.n))
        tr.append(rust_psi_run(a.tacit, a.m, a.n))
        print(f"  psi round {i + 1}: tacit.psi {tp[-1]:.1f} ms, openmined_psi {om[-1]:.1f} ms, tacit (Rust) {tr[-1]:.1f} ms", flush=True)
        load.append(os.getloadavg()[0])

    # Paillier: same keys (phe generates them; tacit takes the same p, q) and values
    ppub, ppriv = phe.generate_paillier_keypair(n_length=a.bits)
    priv = paillier.from_phe(ppriv)
    pub = priv.public_key
    rng = random.Random(29)
    values = [rng.randint(-2**62, 2**62) for _ in range(a.values)]
    rows = []
    pe = [ppub.encrypt(v) for v in values[:2]]
    for i in range(a.rounds):
        rows.append(paillier_round(values, (ppub, ppriv), (pub, priv)))
        r = rows[-1]
        print(f"  paillier round {i + 1}: encrypt {r['phe_encrypt']:.2f}/{r['tacit_encrypt']:.2f} ms, "
              f"add {r['phe_add'] * 1e3:.1f}/{r['tacit_add'] * 1e3:.1f} us, "
              f"decrypt {r['phe_decrypt']:.2f}/{r['tacit_decrypt']:.2f} ms (phe/tacit, per value; "
              f"tacit one by one {r['tacit_decrypt_one_by_one']:.2f} ms)", flush=True)
        load.append(os.getloadavg()[0])
    p = {k: med([r[k] for r in rows]) for k in rows[0]}

    # The floor of one encrypted addition: a bare product mod n² of two ciphertexts,
    # OpenSSL (tacit's backend, one core: BN_mod_mul, and the Montgomery product that
    # tacit's addition is) against gmpy2 (phe's), 2000 each.
    import gmpy2 as g

    x, y, n2 = pe[0].ciphertext(False), pe[1].ciphertext(False), ppub.nsquare
    floor_plain, floor_mont, floor_ifma = paillier._native_floor_mulmod(x, y, n2, 2000)
    floor_openssl, floor_mont = floor_plain / 2000 * 1e3, floor_mont / 2000 * 1e3
    floor_ifma = floor_ifma / 2000 * 1e3 if floor_ifma is not None else None
    gx, gy, gn2 = g.mpz(x), g.mpz(y), g.mpz(n2)
    t = time.perf_counter()
    for _ in range(2000):
        g.t_mod(gx * gy, gn2)
    floor_gmp = (time.perf_counter() - t) / 2000 * 1e3

    res = {
        "m": a.m, "n": a.n, "rounds": a.rounds, "bits": a.bits, "values": a.values, "cores": os.cpu_count(),
        "tacit_psi_python_ms": med(tp), "openmined_psi_ms": med(om), "tacit_psi_rust_ms": med(tr),
        "psi_vs_openmined": med(tp) / med(om),
        "psi_python_vs_rust": med(tp) / med(tr),
        "paillier_ms_per_value": p,
        "encrypt_speedup": p["phe_encrypt"] / p["tacit_encrypt"],
        "add_speedup": p["phe_add"] / p["tacit_add"],
        "add_operator_speedup": p["phe_add"] / p["tacit_add_operator"],
        "decrypt_speedup": p["phe_decrypt"] / p["tacit_decrypt"],
        "decrypt_one_core_speedup": p["phe_decrypt"] / p["tacit_decrypt_one_by_one"],
        "mulmod_floor_ms": {"openssl_one_core": floor_openssl, "openssl_montgomery_one_core": floor_mont,
                            "avx512_ifma_montgomery_one_core": floor_ifma, "gmpy2_one_core": floor_gmp},
        "montgomery_product": paillier._mform_kind(pub),
        "load_average": load, "scheduler": sched(),
    }
    print()
    print(f"PSI, m = {a.m}, n = {a.n} (medians of {a.rounds}; whole run: keys, precomputation, request, response, intersection)")
    print(f"  tacit.psi (malicious-secure, Python)     {res['tacit_psi_python_ms']:9.1f} ms")
    print(f"  openmined_psi (semi-honest, RAW)          {res['openmined_psi_ms']:9.1f} ms")
    print(f"  tacit bench psi (same protocol, Rust)     {res['tacit_psi_rust_ms']:9.1f} ms")
    print(f"Paillier, {a.bits}-bit keys, {a.values} values, ms per value (medians of {a.rounds})")
    for op in ("encrypt", "add", "decrypt"):
        print(f"  {op:<8} phe+gmpy2 {p['phe_' + op]:9.4f}   tacit {p['tacit_' + op]:9.4f}")
    print(f"  add with the + operator, tacit            {p['tacit_add_operator']:9.4f}")
    print(f"  decrypt one by one, tacit (one core)      {p['tacit_decrypt_one_by_one']:9.4f}")
    ifma = f"{floor_ifma:.4f}" if floor_ifma is not None else "n/a (no IFMA)"
    print(f"  floor of add: a*b mod n^2, one core       OpenSSL BN_mod_mul {floor_openssl:.4f}, "
          f"OpenSSL Montgomery {floor_mont:.4f}, AVX-512 IFMA Montgomery {ifma}, gmpy2 {floor_gmp:.4f}")
    print(f"  tacit's additions use                     {paillier._mform_kind(pub)}")
    print(f"  load average during the run               {min(load):.2f} .. {max(load):.2f} (2-core machine: {os.cpu_count()} cores)")
    print()
    print(f"ratio psi_vs_openmined    {res['psi_vs_openmined']:.3f}x   (goal <= 0.5)")
    print(f"ratio psi_python_vs_rust  {res['psi_python_vs_rust']:.3f}x   (goal <= 1.1)")
    print(f"ratio paillier encrypt    {res['encrypt_speedup']:.2f}x faster (goal >= 5)")
    print(f"ratio paillier add        {res['add_speedup']:.2f}x faster (goal >= 5; + operator: {res['add_operator_speedup']:.2f}x)")
    print(f"ratio paillier decrypt    {res['decrypt_speedup']:.2f}x faster (goal >= 1.6; one by one on one core: "
          f"{res['decrypt_one_core_speedup']:.2f}x)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
