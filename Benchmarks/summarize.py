"""Turns the benchmark run's JMH export into one table, with each target marked met or missed."""

import glob
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone

SEQUENTIAL, CONCURRENT = 200, 32 * 10


def load(folder):
    results = {}
    for path in glob.glob(os.path.join(folder, "*.json")):
        with open(path) as handle:
            for element in json.load(handle):
                name = element["benchmark"].split(".", 3)[-1].replace("_", " ")
                metrics = {"throughput": element["primaryMetric"]}
                metrics.update(element.get("secondaryMetrics", {}))
                results[name] = metrics
    return results


def metric(results, benchmark, fragment, percentile="50.0"):
    for name, values in results.get(benchmark, {}).items():
        if fragment.lower() in name.lower():
            return values["scorePercentiles"][percentile]
    return None


def main(folder):
    results = load(folder)
    if not results:
        sys.exit("no benchmark results found in " + folder)
    rows = []

    def row(what, value, target, met):
        rows.append((what, value, target, "met" if met else "MISSED"))

    # 1. Overhead. The target row: p50 of 1,000-request batches (the cost per request once
    # running). The single-request iterations also carry the harness's task start per iteration.
    plain, auth = "Overhead: Resource, no authentication", "Overhead: AuthenticatedResource, valid token"
    batches = "Overhead: batches of 1000, interleaved"
    b0 = metric(results, batches, "ns per request: Resource, no authentication")
    b1 = metric(results, batches, "ns per request: AuthenticatedResource, valid token")
    t0, t1 = metric(results, plain, "wall clock"), metric(results, auth, "wall clock")
    m0, m1 = metric(results, plain, "malloc (total)"), metric(results, auth, "malloc (total)")
    if None not in (b0, b1):
        overhead = (b1 - b0) / 1000
        row(
            "Overhead time per request (auth - plain, p50 of 1,000-request batches)",
            f"{overhead:.2f} µs ({b0 / 1000:.2f} -> {b1 / 1000:.2f})",
            "<= 2 µs",
            overhead <= 2,
        )
    if None not in (t0, t1, m0, m1):
        rows.append((
            "(info) Overhead, one request per iteration (p50, incl. harness task start)",
            f"{t1 - t0:.2f} µs ({t0:.2f} -> {t1:.2f})",
            "-",
            "-",
        ))
        row("Overhead allocations per request (auth - plain, p50)", f"{m1 - m0:.0f} ({m0:.0f} -> {m1:.0f})", "<= 8", m1 - m0 <= 8)

    f0 = metric(results, "Floor: URLRequest(url:)", "wall clock")
    f1 = metric(results, "Floor: URLRequest(url:) + setValue(Authorization)", "wall clock")
    a0 = metric(results, "Floor: URLRequest(url:)", "malloc (total)")
    a1 = metric(results, "Floor: URLRequest(url:) + setValue(Authorization)", "malloc (total)")
    if None not in (f0, f1, a0, a1):
        rows.append((
            "(info) Foundation's setValue(Authorization), which the Linux path skips",
            f"{f1 - f0:.2f} µs, {a1 - a0:.0f} allocations",
            "-",
            "-",
        ))

    # 2. Loopback (requests/s from p50 wall clock per batch).
    def rate(label, variant, count):
        micros = metric(results, f"Loopback {label}, interleaved", f"{label} µs: {variant}")
        return None if not micros else count / (micros / 1e6)

    names = {"bare URLSession": "bare URLSession", "URLSessionTransport, authenticated": "URLSessionTransport",
             "AsyncHTTPClientTransport, authenticated": "AsyncHTTPClientTransport",
             "bare AsyncHTTPClient": "bare AsyncHTTPClient"}
    seq = {k: rate("sequential x200", v, SEQUENTIAL) for k, v in names.items()}
    con = {k: rate("concurrent 32x10", v, CONCURRENT) for k, v in names.items()}
    def paired(label, which):
        value = metric(results, f"Loopback {label}, interleaved", f"{label} ratio x1000: {which}")
        return None if value is None else value / 1000

    def pair(label, which):
        # The SDK and the bare client of its library alone, which goes first alternating.
        benchmark = f"Loopback {label}, paired: " + which.replace(" / ", " vs ")
        value = metric(results, benchmark, f"{label} ratio x1000: {which}")
        return None if value is None else value / 1000

    if all(seq.values()) and all(con.values()):
        # The target rows: p50 of the ratios of batches run in the same iteration (paired).
        # The request rates come from each variant's own p50.
        for label, short, data in (("sequential", "sequential x200", seq), ("32-way concurrent", "concurrent 32x10", con)):
            ratio = pair(short, "URLSessionTransport / bare URLSession") or paired(short, "URLSessionTransport / bare")
            row(
                f"Loopback {label}: URLSessionTransport / bare URLSession (paired p50)",
                f"{ratio:.3f} ({data['URLSessionTransport, authenticated']:.0f} vs {data['bare URLSession']:.0f} req/s)",
                ">= 0.99",
                ratio >= 0.99,
            )
            ratio = pair(short, "AsyncHTTPClientTransport / bare AsyncHTTPClient") or paired(
                short, "AsyncHTTPClientTransport / bare AsyncHTTPClient")
            row(
                f"Loopback {label}: AsyncHTTPClientTransport / bare AsyncHTTPClient (paired p50)",
                f"{ratio:.3f} ({data['AsyncHTTPClientTransport, authenticated']:.0f} vs {data['bare AsyncHTTPClient']:.0f} req/s)",
                ">= 0.97",
                ratio >= 0.97,
            )
        ratio = paired("concurrent 32x10", "AsyncHTTPClientTransport / URLSessionTransport")
        row(
            "Loopback 32-way: AsyncHTTPClientTransport / URLSessionTransport (paired p50)",
            f"{ratio:.2f} ({con['AsyncHTTPClientTransport, authenticated']:.0f} vs {con['URLSessionTransport, authenticated']:.0f} req/s)",
            ">= 3",
            ratio >= 3,
        )
        seq_ahc = seq["AsyncHTTPClientTransport, authenticated"]
        rows.append(("(info) Loopback sequential: AsyncHTTPClientTransport", f"{seq_ahc:.0f} req/s", "-", "-"))
    else:
        rows.append(("Loopback", "not run (no nginx)", "-", "-"))
    # Issue 36: allocations per GET, process-wide, p50 of one-GET iterations.
    allocations = {
        name: metric(results, f"Allocations: one loopback GET, {name}", "malloc (total)")
        for name in ("bare AsyncHTTPClient", "AsyncHTTPClientTransport, authenticated", "bare URLSession",
                     "URLSessionTransport, authenticated")
    }
    if all(value is not None for value in allocations.values()):
        bare, sdk = allocations["bare AsyncHTTPClient"], allocations["AsyncHTTPClientTransport, authenticated"]
        row(
            "Allocations per loopback GET: AsyncHTTPClientTransport - bare AsyncHTTPClient (p50)",
            f"{sdk - bare:+.0f} ({sdk:.0f} vs {bare:.0f})",
            "<= +20",
            sdk - bare <= 20,
        )
        bare, sdk = allocations["bare URLSession"], allocations["URLSessionTransport, authenticated"]
        rows.append((
            "(info) Allocations per loopback GET: URLSessionTransport - bare URLSession (p50)",
            f"{sdk - bare:+.0f} ({sdk:.0f} vs {bare:.0f})", "-", "-"))
    memory = "Memory: 100000 loopback requests, bare AsyncHTTPClient and AsyncHTTPClientTransport"
    bare_growth = metric(results, memory, "RSS growth KiB, 100k: bare AsyncHTTPClient", "100.0")
    sdk_growth = metric(results, memory, "RSS growth KiB, 100k: AsyncHTTPClientTransport", "100.0")
    if None not in (bare_growth, sdk_growth):
        row(
            "RSS growth over 100k loopback requests: AsyncHTTPClientTransport - bare AsyncHTTPClient",
            f"{(sdk_growth - bare_growth) / 1024:.2f} MiB ({sdk_growth / 1024:.2f} vs {bare_growth / 1024:.2f})",
            "<= 1 MiB",
            sdk_growth - bare_growth <= 1024,
        )

    # Parsing: the strict parser against JSONSerialization on the same 1 MiB adversarial bytes.
    parsing = "Parsing: 1 MiB adversarial replies, interleaved"
    for reply in ("deep nesting", "wide object", "long strings"):
        ratio = metric(results, parsing, f"parse ratio x1000: {reply}")
        ours = metric(results, parsing, f"parse µs JSONValue: {reply}")
        theirs = metric(results, parsing, f"parse µs JSONSerialization: {reply}")
        if None not in (ratio, ours, theirs):
            row(
                f"Parsing 1 MiB, {reply}: JSONValue / JSONSerialization (paired p50)",
                f"{ratio / 1000:.2f} ({ours / 1000:.1f} vs {theirs / 1000:.1f} ms)",
                "<= 3",
                ratio / 1000 <= 3,
            )

    # Sessions: the coordinated refresh's cost, and no store I/O for valid tokens.
    refresh = "Store: one refresh, without a store and coordinated through a FileTokenStore, interleaved"
    plain_refresh = metric(results, refresh, "refresh µs: no store")
    file_refresh = metric(results, refresh, "refresh µs: FileTokenStore, coordinated")
    if None not in (plain_refresh, file_refresh):
        rows.append((
            "(info) Coordinated refresh in a FileTokenStore: lock, re-read, in-flight record, fenced write (p50)",
            f"{file_refresh - plain_refresh:.0f} µs per refresh ({plain_refresh:.0f} -> {file_refresh:.0f} µs)",
            "-",
            "-",
        ))
    calls = metric(results, "Store: 10000 requests with a valid token", "store calls per 10000 requests", "100.0")
    if calls is not None:
        row("Store calls for 10,000 requests with a valid token (max)", f"{calls:.0f}", "0", calls == 0)

    # Fleet (issue 15): replicas on PostgreSQL.
    fleet = "Fleet: expiry to 8 x 100 requests done, against one process's refresh, interleaved"
    one = metric(results, fleet, "expiry to all requests done µs: one process, 800 requests")
    one_replica = next(
        (v["scorePercentiles"]["50.0"] for n, v in results.get(fleet, {}).items()
         if n.lower().endswith("one process")), None)
    many = metric(results, fleet, "expiry to all requests done µs: 8 replicas on PostgreSQL")
    trip = metric(results, fleet, "database round trip µs")
    fleet_refreshes = metric(results, fleet, "refreshes per expiry", "100.0")
    if None not in (one, many, trip, fleet_refreshes):
        row("Fleet: refreshes per expiry, 8 replicas x 100 requests (max)", f"{fleet_refreshes:.0f}", "exactly 1", fleet_refreshes == 1)
        limit = (one + 2 * trip) * 1.10
        row(
            "Fleet: expiry to 8 x 100 requests done vs one process doing the 800 with one refresh (p50)",
            f"{many / 1000:.1f} ms vs {one / 1000:.1f} ms (round trip {trip:.0f} µs)",
            f"<= (one process + 2 round trips) x 1.1 = {limit / 1000:.1f} ms",
            many <= limit,
        )
        if one_replica is not None:
            rows.append((
                "(info) Fleet vs one process doing 100 requests with one refresh (p50)",
                f"{many / 1000:.1f} ms vs {one_replica / 1000:.1f} ms",
                "-",
                "-",
            ))
    steady = "Fleet: 10000 requests with a valid token on a PostgresTokenStore"
    statements = metric(results, steady, "database statements per 10000 requests", "100.0")
    fleet_calls = metric(results, steady, "store calls per 10000 requests", "100.0")
    if None not in (statements, fleet_calls):
        row(
            "Fleet: database round trips for 10,000 requests with a valid token (max)",
            f"{statements:.0f} statements, {fleet_calls:.0f} store calls",
            "0",
            statements == 0 and fleet_calls == 0,
        )

    # Fleet at scale (issue 37): K replicas, max_connections 100, directly and through PgBouncer.
    for size in (16, 64, 200):
        for route, budget in (("direct", 100), ("through PgBouncer (pool 20)", 20)):
            name = f"Fleet at scale: {size} replicas {route}, max connections 100"
            served = metric(results, name, "expiry to the last replica served ms")
            total = metric(results, name, "database statements, all replicas")
            scale_refreshes = metric(results, name, "refreshes per expiry", "100.0")
            peak = metric(results, name, "peak server connections", "100.0")
            if None in (served, total, scale_refreshes, peak):
                continue
            row(
                f"Fleet at scale, {size} replicas {route}: refreshes per expiry (max); peak server connections (max)",
                f"{scale_refreshes:.0f}; {peak:.0f}",
                f"exactly 1; <= {budget}",
                scale_refreshes == 1 and peak <= budget,
            )
            rows.append((
                f"(info) Fleet at scale, {size} replicas {route}: expiry to the last replica served (p50); "
                "statements per replica",
                f"{served:.0f} ms; {total / size:.1f}",
                "-",
                "-",
            ))

    # 3. Coalesced refresh.
    expired, valid = "Coalesced refresh: 10000 concurrent, expired token", "Coalesced refresh: 10000 concurrent, valid token"
    refreshes = metric(results, expired, "refreshes", "100.0")
    te, tv = metric(results, expired, "wall clock"), metric(results, valid, "wall clock")
    if None not in (refreshes, te, tv):
        row("Coalesced refresh: refreshes for 10,000 concurrent (max)", f"{refreshes:.0f}", "exactly 1", refreshes == 1)
        returned = metric(results, expired, "refresh returned")
        if returned is not None:
            rows.append(("(info) Coalesced refresh: the 50 ms endpoint returned after", f"{returned:.0f} ms", "-", "-"))
        limit = (tv + 50_000) * 1.10
        row(
            "Coalesced refresh: total time, expired vs valid (p50)",
            f"{te / 1000:.1f} ms vs {tv / 1000:.1f} ms",
            f"<= (valid + 50 ms) x 1.1 = {limit / 1000:.1f} ms",
            te <= limit,
        )

    floor_task = metric(results, "Floor: 10000 tasks await one 50 ms Task's value", "wall clock")
    floor_continuation = metric(results, "Floor: 10000 tasks await one 50 ms refresh on continuations", "wall clock")
    if None not in (floor_task, floor_continuation):
        rows.append((
            "(info) Runtime: 10,000 tasks wait 50 ms, Task.value vs continuations (p50)",
            f"{floor_task / 1000:.1f} ms vs {floor_continuation / 1000:.1f} ms",
            "-",
            "-",
        ))

    # DPoP (issue 17): a DPoP request over a bearer request, p50 of interleaved 1,000-request batches.
    dpop_batches = "DPoP: batches of 1000, bearer and DPoP interleaved"
    bearer_ns = metric(results, dpop_batches, "ns per request: Bearer request")
    dpop_ns = metric(results, dpop_batches, "ns per request: DPoP request")
    if None not in (bearer_ns, dpop_ns):
        extra = (dpop_ns - bearer_ns) / 1000
        row(
            "DPoP: extra time per request over bearer (p50 of 1,000-request batches)",
            f"{extra:.1f} µs ({bearer_ns / 1000:.1f} -> {dpop_ns / 1000:.1f})",
            "<= 50 µs",
            extra <= 50,
        )
    signature = metric(results, "DPoP: one P-256 signature through jwt-kit", "wall clock")
    proof = metric(results, "DPoP: one proof", "wall clock")
    if None not in (signature, proof):
        rows.append(("(info) DPoP: one proof vs its P-256 signature (p50, incl. harness)", f"{proof:.1f} µs vs {signature:.1f} µs", "-", "-"))

    # DPoP (issue 36): a proof against one ES256 signature of the same key, paired per iteration.
    pair = "DPoP: proof vs ES256 signature of the same key, interleaved"
    ratio = metric(results, pair, "ratio x1000: proof / signature")
    proof_ns = metric(results, pair, "ns per DPoP proof")
    signature_ns = metric(results, pair, "ns per ES256 signature")
    if None not in (ratio, proof_ns, signature_ns):
        row(
            "DPoP: one proof / one ES256 signature of the same key (paired p50)",
            f"{ratio / 1000:.2f} ({proof_ns / 1000:.1f} vs {signature_ns / 1000:.1f} µs)",
            "<= 1.3",
            ratio / 1000 <= 1.3,
        )

    # 4. Memory.
    growth = metric(results, "Memory: 100000 authenticated requests", "RSS growth")
    base = metric(results, "Memory: 100000 authenticated requests", "RSS after 1k")
    if growth is not None:
        row("Memory: RSS growth from request 1,000 to 100,000", f"{growth:.0f} KiB (from {base:.0f} KiB)", "< 1024 KiB", growth < 1024)

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"\nMeasured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cores ({cpu}); {swift}\n")
    width = max(len(r[0]) for r in rows)
    print(f"| {'benchmark'.ljust(width)} | value | target | result |")
    print(f"|{'-' * (width + 2)}|---|---|---|")
    for what, value, target, result in rows:
        print(f"| {what.ljust(width)} | {value} | {target} | {result} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".build/bench-run/results")
