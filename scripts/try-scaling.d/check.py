"""The checks of scripts/try-scaling, run against what it started.

    python check.py reads --proxy PORT --servers PORT,PORT,... --edition N
    python check.py writes --proxy PORT --conf YML --pidfile FILE --sentinels PORT,PORT,PORT
                           --shard NAME:MASTER_PORT:MASTER_PID:REPLICA_PORT [--shard ...]

`reads`: every record of the sample data set's edition N reads back through the
read-only nutcracker with its value, each read server holds exactly the
keys the routing gave it, and a write through that proxy is refused.

`writes`: writes through the writable nutcracker land on the shards'
masters and reach their replicas; then the first shard's master is killed
(SIGKILL), and the check waits for Sentinel to promote its replica, for the
reconfig script to point nutcracker at it, and for every write through the
proxy to succeed again, then checks that nothing acknowledged before the
kill is lost and that the new writes are on the promoted replica."""

import argparse
import os
import signal
import sys
import time
import warnings

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_groups import sample_records  # noqa: E402
from twemproxy_hash import server_of  # noqa: E402

TIMEOUT = 60


def fail(message):
    raise SystemExit(f"FAILED: {message}")


def proxy_client(port, timeout=5.0):
    # nutcracker closes the connection of a client sending a command it does
    # not proxy; redis-py 5 and later send CLIENT SETINFO on connecting, and
    # 8 sends HELLO 3: ask for neither.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return redis.Redis(port=port, socket_timeout=timeout, protocol=2, lib_name=None, lib_version=None)


def direct(port):
    return redis.Redis(port=port, socket_timeout=5)


def wait_until(what, done, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if done():
                return
        except (redis.exceptions.RedisError, OSError):
            pass
        if time.monotonic() > deadline:
            fail(f"waited {timeout} s in vain for {what}")
        time.sleep(0.1)


def check_reads(args):
    servers = [int(p) for p in args.servers.split(",")]
    records = sample_records(args.edition)
    client = proxy_client(args.proxy)
    wrong = 0
    for at in range(0, len(records), 500):
        chunk = records[at : at + 500]
        # MGET: nutcracker splits it by server and joins the replies.
        values = client.mget([k for k, _ in chunk])
        wrong += sum(1 for (_, v), got in zip(chunk, values) if got != v.encode())
    if wrong:
        fail(f"{wrong} of {len(records)} records of edition {args.edition} did not read back through nutcracker")
    print(
        f"reads: all {len(records)} records of edition {args.edition} read back through nutcracker "
        "(MGET of 500 keys at a time)"
    )
    expected = [0] * len(servers)
    for key, _ in records:
        expected[server_of(key, len(servers))] += 1
    held = [direct(port).dbsize() for port in servers]
    if held != expected:
        fail(f"the read servers hold {held} records, the routing gave them {expected}")
    print(f"reads: each read server holds just its group's keys: {held}")
    try:
        client.set("user:000000", "changed")
    except redis.exceptions.ReadOnlyError as error:  # redis-py's name for a READONLY reply
        print(f"reads: a write through the read-only proxy is refused: READONLY {error}")
    else:
        fail("a write through the read-only nutcracker was taken")


def nutcracker_pid(pidfile):
    with open(pidfile) as f:
        return int(f.read().strip())


def server_address(conf, name):
    with open(conf) as f:
        for line in f:
            fields = line.split()
            if len(fields) == 3 and fields[0] == "-" and fields[2] == name:
                return fields[1].rsplit(":", 1)[0]
    fail(f"{conf} has no server named {name}")


def check_writes(args):
    shards = []
    for spec in args.shard:
        name, master, pid, replica = spec.split(":")
        shards.append((name, int(master), int(pid), int(replica)))
    sentinels = [int(p) for p in args.sentinels.split(",")]

    def sentinels_ready():
        for port in sentinels:
            for name, *_ in shards:
                state = direct(port).sentinel_master(name)
                if state["num-slaves"] != 1 or state["num-other-sentinels"] != len(sentinels) - 1:
                    return False
        return True

    wait_until("every Sentinel to see every replica and the other Sentinels", sentinels_ready)
    print(f"writes: {len(sentinels)} Sentinels watch {len(shards)} masters, each with its replica")

    client = proxy_client(args.proxy)
    before = {f"w:{i}": f"value {i}" for i in range(1000)}
    for key, value in before.items():
        client.set(key, value)
    on = {}
    for name, master, _, replica in shards:
        keys = [k for k in before if direct(master).get(k) is not None]
        on[name] = keys
        wait_until(
            f"{name}'s replica to have its master's writes",
            lambda: all(v is not None for v in direct(replica).mget(keys)),
            timeout=20,
        )
    counts = {name: len(keys) for name, keys in on.items()}
    if sum(counts.values()) != len(before) or 0 in counts.values():
        fail(f"the writes through nutcracker are not spread over the masters once each: {counts}")
    print(f"writes: {len(before)} writes through nutcracker landed on the masters {counts} and reached the replicas")

    name, master, pid, replica = shards[0]
    old_proxy = nutcracker_pid(args.pidfile)
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    print(f"writes: killed {name}'s master (127.0.0.1:{master}, pid {pid})")
    after = {f"after:{i}": f"after {i}" for i in range(200)}

    def all_written():
        c = proxy_client(args.proxy, timeout=1.0)
        try:
            for key, value in after.items():
                c.set(key, value)
        finally:
            c.close()
        return True

    wait_until("writes through nutcracker to work again after the kill", all_written)
    took = time.monotonic() - killed
    promoted = direct(sentinels[0]).sentinel_get_master_addr_by_name(name)
    if promoted is None or int(promoted[1]) != replica:
        fail(f"Sentinel names {promoted} as {name}'s master, not its replica's port {replica}")
    if server_address(args.conf, name) != f"127.0.0.1:{replica}":
        fail(f"{args.conf} does not name {name}'s promoted replica 127.0.0.1:{replica}")
    if nutcracker_pid(args.pidfile) == old_proxy:
        fail("nutcracker was not restarted")
    print(
        f"writes: after {took:.1f} s Sentinel had promoted 127.0.0.1:{replica}, the reconfig script had "
        f"rewritten {os.path.basename(args.conf)} and restarted nutcracker, and all {len(after)} writes went through"
    )
    lost = [k for k, v in before.items() if client.get(k) != v.encode()]
    if lost:
        fail(f"{len(lost)} writes made before the kill do not read back through nutcracker, e.g. {lost[:3]}")
    new_master = direct(replica)
    routed_there = [k for k in after if new_master.get(k) is not None]
    others = {n: sum(1 for k in after if direct(m).get(k) is not None) for n, m, _, _ in shards[1:]}
    if not routed_there or len(routed_there) + sum(others.values()) != len(after):
        fail(f"the writes after the failover are not on the masters: {len(routed_there)} on {name}'s, {others}")
    print(
        f"writes: every write made before the kill reads back; {len(routed_there)} of the new writes are on "
        f"{name}'s promoted replica, the rest on {others}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    reads = sub.add_parser("reads")
    reads.add_argument("--proxy", type=int, required=True)
    reads.add_argument("--servers", required=True)
    reads.add_argument("--edition", type=int, required=True)
    writes = sub.add_parser("writes")
    writes.add_argument("--proxy", type=int, required=True)
    writes.add_argument("--conf", required=True)
    writes.add_argument("--pidfile", required=True)
    writes.add_argument("--sentinels", required=True)
    writes.add_argument("--shard", action="append", required=True)
    args = parser.parse_args()
    check_reads(args) if args.what == "reads" else check_writes(args)


if __name__ == "__main__":
    main()
