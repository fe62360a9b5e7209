#!/usr/bin/python3
"""aiohttp_client.py - a Python benchmark client written the way vLLM's
benchmarks/backend_request_func.py is (Debian python3-aiohttp, asyncio, one ClientSession,
time.perf_counter() per chunk), so that latscope can measure what such a client adds.

Used by `make bench` (tests/perf: the Python anchor of the three-client table) and by the
`latscope watch` tests (a harness the probes watch from outside). --delay-ms D busy-waits D ms
after each chunk it reads: a harness that holds bytes the kernel already has, by a known amount.

Output (--save-result FILE): vLLM's --save-result keys that matter here (ttfts, itls in seconds,
completed, failed, mean/median/p99 TTFT and ITL in ms) plus "requests": per request its id,
start_ns (CLOCK_MONOTONIC, as time.perf_counter uses on Linux), ttft_s, itls_s, latency_s, error;
and run_start_ns (the run's start, CLOCK_MONOTONIC ns).
Only loopback is meant: the tests never pass another address.
"""
import argparse
import asyncio
import json
import random
import sys
import time

import aiohttp


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8000")
    p.add_argument("--endpoint", default="/v1/completions")
    p.add_argument("--model", default="sim")
    p.add_argument("--num-prompts", type=int, default=16)
    p.add_argument("--max-concurrency", type=int, default=0, help="0 = no cap")
    p.add_argument("--request-rate", default="inf", help="req/s (Poisson) or inf")
    p.add_argument("--input-words", type=int, default=32, help="words of each prompt")
    p.add_argument("--output-len", type=int, default=64, help="max_tokens")
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--delay-ms", type=float, default=0.0,
                   help="busy-wait this long after each chunk read (a slow harness)")
    p.add_argument("--request-id-prefix", default="py-")
    p.add_argument("--cacert", default=None, help="CA file for https")
    p.add_argument("--insecure", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-result", default=None, help="write the result JSON here")
    p.add_argument("--request-timeout", type=float, default=60.0)
    p.add_argument("--force-close", action="store_true",
                   help="a new connection per request (llama-server closes one after a stream: a "
                        "pooled connection reused before that close arrives loses its request)")
    return p.parse_args(argv)


def busy_wait(seconds):
    """Holds the event loop (not a sleep): the next chunk waits in the kernel meanwhile."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def one_request(session, args, url, request_id):
    """vLLM's async_request_openai_completions, trimmed to what the timing needs."""
    payload = {
        "model": args.model,
        "prompt": " ".join(["hello"] * args.input_words),
        "temperature": 0.0,
        "max_tokens": args.output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if args.ignore_eos:
        payload["ignore_eos"] = True
    headers = {"x-request-id": request_id}
    out = {"id": request_id, "ttft_s": 0.0, "itls_s": [], "latency_s": 0.0, "error": ""}
    st = time.perf_counter()
    out["start_ns"] = time.monotonic_ns()
    most_recent = st
    try:
        async with session.post(url, json=payload, headers=headers) as response:
            if response.status != 200:
                out["error"] = f"HTTP {response.status}"
                return out
            first = True
            async for chunk_bytes in response.content:
                chunk_bytes = chunk_bytes.strip()
                if not chunk_bytes:
                    continue
                chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                if chunk == "[DONE]":
                    continue
                data = json.loads(chunk)
                if data.get("choices"):
                    timestamp = time.perf_counter()
                    if first:
                        out["ttft_s"] = timestamp - st
                        first = False
                    else:
                        out["itls_s"].append(timestamp - most_recent)
                    most_recent = timestamp
                    if args.delay_ms > 0:
                        busy_wait(args.delay_ms / 1000.0)
            if first:
                out["error"] = "no token chunk"
            out["latency_s"] = most_recent - st
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def arrival_gaps(args):
    rate = float(args.request_rate)
    rng = random.Random(args.seed)
    for _ in range(args.num_prompts):
        yield 0.0 if rate == float("inf") else rng.expovariate(rate)


async def run(args):
    url = args.base_url.rstrip("/") + args.endpoint
    ssl_ctx = None
    if url.startswith("https://"):
        import ssl
        ssl_ctx = ssl.create_default_context(cafile=args.cacert)
        if args.insecure:
            ssl_ctx.check_hostname = False
            ssl_ctx.verify_mode = ssl.CERT_NONE
    connector = aiohttp.TCPConnector(limit=args.max_concurrency or 0, ssl=ssl_ctx,
                                     force_close=args.force_close)
    timeout = aiohttp.ClientTimeout(total=args.request_timeout)
    sem = asyncio.Semaphore(args.max_concurrency) if args.max_concurrency > 0 else None

    async def limited(session, request_id):
        if sem is None:
            return await one_request(session, args, url, request_id)
        async with sem:
            return await one_request(session, args, url, request_id)

    async with aiohttp.ClientSession(connector=connector, timeout=timeout,
                                     trust_env=False) as session:
        tasks = []
        t0 = time.perf_counter()
        run_start_ns = time.monotonic_ns()
        for i, gap in enumerate(arrival_gaps(args)):
            if gap > 0:
                await asyncio.sleep(gap)
            rid = f"{args.request_id_prefix}{i}"
            tasks.append(asyncio.create_task(limited(session, rid)))
        results = await asyncio.gather(*tasks)
        duration = time.perf_counter() - t0
    return results, duration, run_start_ns


def pct(values, q):
    """numpy's default (linear) percentile, without numpy."""
    if not values:
        return 0.0
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarise(results, duration, run_start_ns=0):
    ok = [r for r in results if not r["error"]]
    ttfts = [r["ttft_s"] for r in ok]
    itls = [x for r in ok for x in r["itls_s"]]
    return {
        "duration": duration,
        "run_start_ns": run_start_ns,
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "ttfts": ttfts,
        "itls": itls,
        "mean_ttft_ms": 1000.0 * sum(ttfts) / len(ttfts) if ttfts else 0.0,
        "median_ttft_ms": 1000.0 * pct(ttfts, 50),
        "p99_ttft_ms": 1000.0 * pct(ttfts, 99),
        "mean_itl_ms": 1000.0 * sum(itls) / len(itls) if itls else 0.0,
        "median_itl_ms": 1000.0 * pct(itls, 50),
        "p99_itl_ms": 1000.0 * pct(itls, 99),
        "errors": sorted({r["error"] for r in results if r["error"]}),
        "requests": results,
    }


def main(argv):
    args = parse_args(argv)
    results, duration, run_start_ns = asyncio.run(run(args))
    summary = summarise(results, duration, run_start_ns)
    print(f"completed {summary['completed']} failed {summary['failed']} "
          f"mean TTFT {summary['mean_ttft_ms']:.3f} ms median ITL {summary['median_itl_ms']:.3f} ms")
    for e in summary["errors"][:5]:
        print(f"error: {e}", file=sys.stderr)
    if args.save_result:
        with open(args.save_result, "w") as f:
            json.dump(summary, f)
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
