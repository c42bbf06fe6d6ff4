#!/usr/bin/python3
"""Per-operation latency percentiles of a Ceph pool, shaped like `rados bench`.

`rados bench` prints average, stddev, min and max latency but no percentiles,
so a p99 target against Ceph cannot be judged from it. This probe runs the
same workload through librados (python3-rados, which Debian's `ceph` package
already installs): THREADS operations in flight, each a whole-object write of
BLOCK bytes to a new object (`write`), or a whole-object read of the objects a
previous `write` left, in order (`seq`). It times every operation on the
client and prints rados bench's labels plus the percentiles:

    Bandwidth (MB/sec):  (MiB/s, as rados bench)
    Average Latency(s):  p50 Latency(s):  p99 Latency(s):  Max latency(s):

librados calls release the GIL, so the threads do not queue on Python while
an operation is in flight; the Python work per operation (a few microseconds)
is noise against latencies of tens of milliseconds.

    rados_latency.py --conf CEPH_CONF --pool POOL write|seq
        [--seconds S] [--threads T] [--block-size BYTES] [--prefix NAME]
        [--max-objects N]
"""
import argparse
import sys
import threading
import time

import rados


def percentile(sorted_values, p):
    """The same rank as `weft bench`: the value at index floor(p/100 * n)."""
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conf", required=True)
    ap.add_argument("--pool", required=True)
    ap.add_argument("mode", choices=["write", "seq"])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--block-size", type=int, default=4 << 20)
    ap.add_argument("--prefix", default="weft_latency_probe")
    ap.add_argument("--max-objects", type=int, default=0,
                    help="write: stop after this many objects too (0: only --seconds)")
    args = ap.parse_args()
    if args.threads < 1 or args.block_size < 1 or args.seconds <= 0:
        sys.exit("threads, block size and seconds must be positive")

    cluster = rados.Rados(conffile=args.conf)
    cluster.connect(timeout=30)
    ioctx = cluster.open_ioctx(args.pool)
    names_key = args.prefix + "_count"

    latencies = []
    moved = [0]
    errors = []
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds

    if args.mode == "write":
        payload = bytes((i * 7 + 3) & 0xFF for i in range(256)) * (args.block_size // 256) + \
            bytes(args.block_size % 256)
        next_index = [0]

        def claim():
            with lock:
                i = next_index[0]
                if args.max_objects and i >= args.max_objects:
                    return None
                next_index[0] += 1
                return i
    else:
        try:
            total = int(ioctx.read(names_key).decode() or "0")
        except rados.ObjectNotFound:
            sys.exit("no objects to read: run `write` first with the same --prefix")
        next_index = [0]

        def claim():
            with lock:
                i = next_index[0]
                if i >= total:
                    return None
                next_index[0] += 1
                return i

    def worker():
        local = []
        local_bytes = 0
        while time.monotonic() < deadline:
            i = claim()
            if i is None:
                break
            name = "%s_%d" % (args.prefix, i)
            start = time.monotonic()
            try:
                if args.mode == "write":
                    ioctx.write_full(name, payload)
                    local_bytes += len(payload)
                else:
                    data = ioctx.read(name, args.block_size)
                    local_bytes += len(data)
            except rados.Error as e:
                with lock:
                    errors.append("%s: %s" % (name, e))
                break
            local.append(time.monotonic() - start)
        with lock:
            latencies.extend(local)
            moved[0] += local_bytes

    began = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    if args.mode == "write":
        ioctx.write_full(names_key, str(next_index[0]).encode())
    ioctx.close()
    cluster.shutdown()
    if errors:
        sys.exit("errors: " + "; ".join(errors[:5]))

    lat = sorted(latencies)
    print("Total time run:       %.3f" % elapsed)
    print("Total operations:     %d" % len(lat))
    print("Bandwidth (MB/sec):   %.3f" % (moved[0] / 1048576.0 / elapsed))
    print("Average IOPS:         %.1f" % (len(lat) / elapsed))
    print("Average Latency(s):   %.6f" % (sum(lat) / len(lat) if lat else 0.0))
    print("p50 Latency(s):       %.6f" % percentile(lat, 50))
    print("p99 Latency(s):       %.6f" % percentile(lat, 99))
    print("Max latency(s):       %.6f" % (lat[-1] if lat else 0.0))
    print("Min latency(s):       %.6f" % (lat[0] if lat else 0.0))


if __name__ == "__main__":
    main()
