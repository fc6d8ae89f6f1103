#!/usr/bin/env python3
"""External truth the project did not write (issue 36, item 7): the Linux kernel's token-bucket qdisc.

Two network namespaces joined by one veth pair, `tc qdisc replace dev X root tbf rate R burst 16k latency
200ms` on each end's egress. tbf lets R bytes per second of skb->len leave the device, headers included
(qdisc_pkt_len: the Ethernet frame without FCS; a GSO skb counts the headers of every segment), so what a
transport's payload can reach is R x payload / frame. Over that link, in one run of this script:
  - qperf's tcp_bw (not ours: the kernel's TCP and qperf's clock);
  - logpbench's flood (Bell et al. 4.2), the method that defines a per-byte gap: its G is the slope of the
    time per message against the message size, g(n) = g + G n, so constant per-message bytes (the AM frame,
    a provider's header) fall into g and G is the wire's time per payload byte;
  - logpbench's bw (perftest's ib_send_bw) at one large size, in MB/s.
Each is checked against the rate tbf reports back (tc -j qdisc show), net of header bytes:
  ofi_tcp:        libfabric's tcp provider over the kernel's TCP. A full segment carries MSS payload bytes
                  in a frame of PMTU + 14 bytes (IP and TCP headers with their options are PMTU - MSS; the
                  Ethernet header 14). MSS and PMTU are read from the run's own connection (ss -ti), so a
                  kernel without TCP timestamps, or another MTU, changes the figure without a change here.
  dpdk_af_packet: DPDK's net_af_packet with qdisc_bypass=0 (its default, 1, would go around tbf). A bulk
                  message is cut into chunks of MTU - sizeof(WireHdr) bytes (dpdk/wire.hpp, read here), each
                  in its own frame with the Ethernet header (RTE_ETHER_HDR_LEN) and WireHdr, then one AM
                  frame. The sizes are whole numbers of chunks, so the frames per payload byte are exact.

The rate: 100 Mbit/s, 80 ns per wire byte. A frame of 1514 bytes then holds the link 121 us; a message's
per-frame CPU cost on this 2-core VM (kernel TCP with its softirq, or a DPDK copy into the af_packet ring) is
a few us, so the link, not the CPU, sets the pace with an order of magnitude to spare even while other work
shares the cores. A higher rate (1 Gbit/s: 12 us a frame) would bring the CPU within reach of the wire.
The sizes: 8 KiB .. 64 KiB (6 .. 44 frames); one frame's per-message cost (a few us) is under 1% of the
smallest message's 660 us of wire time, and the range is wide enough that the slope is read over 8x in size.

Like the other tests it does not take the CPU lock itself: run it under `flock /tmp/logpb-cpu.lock`.
usage: tbf.py LOGPBENCH SOURCE_DIR ofi_tcp|dpdk_af_packet [--mbit R] [--expect-mbit X] [--repeat N]
  --expect-mbit X: check against X instead of the rate enforced (to see the test fail: a wrong truth).
  --repeat N: measure N times in one lab and print the spread (how the tolerance was chosen).
Exit 77 (ctest SKIP_RETURN_CODE) with the reason when a prerequisite is missing here: network namespaces or
tbf (needs root), qperf, libfabric's tcp provider, DPDK's af_packet PMD. Namespaces are removed on every
exit, SIGINT and SIGTERM included; ones left by a SIGKILLed run are removed by the next run.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lpbtest import BIN, SRC, load  # noqa: E402

SKIP = 77
ETH_HDR = 14  # Ethernet II header (RTE_ETHER_HDR_LEN, ETH_HLEN): in skb->len at a veth's egress; no FCS
PREFIX = "lpbtbf-"
ADDR_A, ADDR_B = "10.79.0.1", "10.79.0.2"
# Tolerance, one-sided by nature: tbf's rate is a ceiling (a payload rate) and a floor (a time per byte).
# Faster than the wire by more than SLACK_FAST is a wrong figure: a clock or a byte count, since the only
# free bytes are the 16 KiB bucket a stream starts with (0.1% of a bw stream, none of G: it is the same
# in every flood, so it falls into g). Slower by up to SLACK_SLOW is the host, not the method: a stall of
# either process or of the kernel's softirq on a loaded 2-core VM idles the link, and nothing gives that
# time back. SLACK_SLOW is set from repeated runs here (ofi_tcp, 8 runs on a VM at load 8-11): G's ratio
# to the wire was 0.986..1.034, bw's best of two runs 0.982..0.995 (a single run once read 0.919, hence
# the best of two), qperf's 0.986..0.997. 6% is twice the worst slowdown of the figures as now taken, and
# it stays well below the header share of a frame (11% at MTU 576), so a truth that forgot the headers
# (G = 80 ns/byte against 90 measured) fails.
SLACK_FAST, SLACK_SLOW = 0.02, 0.06
# The veth's MTU: small, so that the header bytes are a share of every frame that the tolerance resolves
# (TCP: 66 of 590 bytes, 11%; DPDK: 34 of 590, 5.8%). At 1500 they would be 4.4% and 2.2%, within reach
# of the noise of a loaded 2-core VM, and a test that forgot them could pass. 576 is IPv4's minimum
# datagram every host must accept; 590-byte frames at 100 Mbit/s are 21,000 a second, still far below what
# either transport's CPU can move.
MTU = 576
CC = "reno"


class Skip(Exception):
    pass


class Stop(Exception):
    pass


def sh(args, check=True, timeout=60, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}: {(p.stdout + p.stderr).strip()}")
    return p


def in_ns(ns, args):
    return ["ip", "netns", "exec", ns] + list(args)


def remove_stale():
    """Namespaces of earlier runs whose process is gone (SIGKILL, a ctest timeout): removed."""
    p = sh(["ip", "netns", "list"], check=False)
    for line in p.stdout.splitlines():
        m = re.match(rf"({PREFIX}(\d+)-[ab])\b", line)
        if m and not os.path.exists(f"/proc/{m.group(2)}"):
            sh(["ip", "netns", "del", m.group(1)], check=False)


class Lab:
    """Namespaces A and B, veth tbfa (in A) <-> tbfb (in B), tbf at rate R on both egresses."""

    def __init__(self, mbit, mtu):
        self.a = f"{PREFIX}{os.getpid()}-a"
        self.b = f"{PREFIX}{os.getpid()}-b"
        self.dev = {self.a: "tbfa", self.b: "tbfb"}
        self.mbit, self.mtu_bytes = mbit, mtu
        self.procs = []

    def __enter__(self):
        if os.geteuid() != 0:
            raise Skip("needs root (network namespaces, tc)")
        remove_stale()
        for ns in (self.a, self.b):
            p = sh(["ip", "netns", "add", ns], check=False)
            if p.returncode != 0:
                self.__exit__()
                raise Skip(f"ip netns add failed: {p.stderr.strip()}")
        try:
            sh(["ip", "link", "add", "tbfa", "netns", self.a, "type", "veth", "peer", "name", "tbfb", "netns", self.b])
            for ns, addr in ((self.a, ADDR_A), (self.b, ADDR_B)):
                d = self.dev[ns]
                sh(["ip", "-n", ns, "link", "set", "lo", "up"])
                # A congestion control that keeps tbf's queue backlogged, so the wire never idles: this
                # kernel's default here, bbr, aims at an empty queue, and on a loaded 2-core VM a scheduling
                # stall then idles the link, so TCP (qperf too) reads 1-12% below it. reno is in every
                # kernel and is allowed inside a namespace (tcp_allowed_congestion_control); it changes
                # nothing outside these two namespaces.
                sh(in_ns(ns, ["sysctl", "-qw", f"net.ipv4.tcp_congestion_control={CC}"]))
                sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", d])
                sh(["ip", "-n", ns, "link", "set", d, "mtu", str(self.mtu_bytes)])
                sh(["ip", "-n", ns, "link", "set", d, "up"])
                p = sh(in_ns(ns, ["tc", "qdisc", "replace", "dev", d, "root", "tbf", "rate", f"{self.mbit}mbit",
                                  "burst", "16k", "latency", "200ms"]), check=False)
                if p.returncode != 0:
                    raise Skip(f"tc tbf refused here: {p.stderr.strip()}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def spawn(self, ns, args, log):
        p = subprocess.Popen(in_ns(ns, args), stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def tbf(self, ns):
        """What tbf enforces and has counted on ns's egress (tc's own JSON: rate in bytes per second)."""
        q = json.loads(sh(in_ns(ns, ["tc", "-s", "-j", "qdisc", "show", "dev", self.dev[ns]])).stdout)
        q = [x for x in q if x.get("kind") == "tbf"][0]
        return {"rate_Bps": q["options"]["rate"], "burst": q["options"].get("burst"),
                "bytes": q.get("bytes", 0), "packets": q.get("packets", 0), "drops": q.get("drops", 0)}

    def mtu(self, ns):
        j = json.loads(sh(["ip", "-n", ns, "-j", "link", "show", self.dev[ns]]).stdout)[0]
        assert j.get("link_type") == "ether", j  # ETH_HDR is an Ethernet header
        return j["mtu"]


class SsSampler:
    """Samples `ss -tiH` in a namespace while a run lasts: the TCP connection that carried the most bytes,
    with its MSS (payload per full segment, options already taken off) and path MTU."""

    def __init__(self, ns):
        self.ns, self.best = ns, None
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            p = subprocess.run(in_ns(self.ns, ["ss", "-tinH", "state", "established"]), capture_output=True,
                               text=True)
            lines = p.stdout.splitlines()
            for i in range(0, len(lines) - 1):
                info = lines[i + 1]
                m_mss, m_pmtu = re.search(r"\bmss:(\d+)", info), re.search(r"\bpmtu:(\d+)", info)
                m_sent = re.search(r"\bbytes_sent:(\d+)", info)
                if not (m_mss and m_pmtu and m_sent):
                    continue
                c = {"mss": int(m_mss.group(1)), "pmtu": int(m_pmtu.group(1)), "bytes_sent": int(m_sent.group(1)),
                     "cc": info.split()[0], "conn": " ".join(lines[i].split()[2:4])}
                if self.best is None or c["bytes_sent"] > self.best["bytes_sent"]:
                    self.best = c
            self.stop.wait(0.25)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()


def run_pair(lab, server_args, client_args, tmp, name, timeout=120):
    """logpbench server in A, client in B; returns the client's JSON."""
    port = 18700 + os.getpid() % 500
    out = os.path.join(tmp, name + ".json")
    with open(os.path.join(tmp, name + "-server.log"), "w") as log:
        srv = lab.spawn(lab.a, [BIN, "server", "--cpu", "1", "--port", str(port), "-q"] + server_args, log)
        time.sleep(0.2)
        cl = subprocess.run(in_ns(lab.b, [BIN, "client", ADDR_A, "--cpu", "0", "--port", str(port), "-q",
                                          "--json", out] + server_args + client_args),
                            capture_output=True, text=True, timeout=timeout)
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
    if cl.returncode != 0:
        with open(log.name) as f:
            raise AssertionError(f"logpbench client ({name}) exited {cl.returncode}:\n{cl.stdout}{cl.stderr}\n"
                                 f"server:\n{f.read()}")
    return load(out)


def qperf_bw(lab, tmp):
    """qperf tcp_bw from B to A: payload bytes per second as qperf reports them (its MB is 10^6 bytes), and
    its data connection as ss saw it."""
    port = 19800 + os.getpid() % 100
    with open(os.path.join(tmp, "qperf-server.log"), "w") as log, SsSampler(lab.b) as ss:
        srv = lab.spawn(lab.a, ["qperf", "--listen_port", str(port)], log)
        time.sleep(0.3)
        p = sh(in_ns(lab.b, ["qperf", "--listen_port", str(port), "-e", "5", "-t", "3", "-m", "64k", ADDR_A,
                             "tcp_bw"]), timeout=60)
        srv.kill()
    m = re.search(r"bw\s*=\s*([\d.]+)\s*([KMG])B/sec", p.stdout)
    assert m, p.stdout
    assert ss.best, "ss saw no TCP connection in B during qperf"
    return float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)], ss.best


def tcp_rate(rate_Bps, c):
    """TCP's payload rate through tbf: a full segment's MSS payload bytes in a frame of PMTU + Ethernet."""
    return rate_Bps * c["mss"] / (c["pmtu"] + ETH_HDR)


def flood_G(doc):
    G = doc["parameters"]["G"]
    assert isinstance(G.get("value_ns"), (int, float)) and G["value_ns"] > 0, f"flood gave no G: {G}"
    per = {s["bytes"]: s for s in doc["runs"][0]["raw"]}
    return G["value_ns"], {n: min(x for x in s["gap_runs_ns"] if x) for n, s in per.items()}


def bw_Bps(doc):
    """The best run's average: tbf's rate is a ceiling that only the host's stalls hold a run below."""
    s = doc["bw"]["per_size"][0]
    return s["bytes"], max(x for x in s["bw_average_MBps"]["runs"] if x) * 1048576.0  # perftest's MB: 2^20 B


def wirehdr_bytes():
    """sizeof(WireHdr) as dpdk/wire.hpp asserts it."""
    with open(os.path.join(SRC, "dpdk", "wire.hpp")) as f:
        m = re.search(r"static_assert\(sizeof\(WireHdr\)\s*==\s*(\d+)\)", f.read())
    assert m, "dpdk/wire.hpp no longer asserts sizeof(WireHdr): read the header size anew"
    return int(m.group(1))


def check(rows, name, got, truth, kind):
    """kind 'rate': truth is a ceiling; 'time': truth is a floor. ok within SLACK_FAST / SLACK_SLOW."""
    r = got / truth
    slow = 1 / r - 1 if kind == "rate" else r - 1
    rows.append((name, got, truth, r, -SLACK_FAST <= slow <= SLACK_SLOW))
    return r


def report(rows):
    print(f"  {'quantity':<52}{'measured':>14}{'truth':>14}{'ratio':>9}")
    for name, got, truth, r, ok in rows:
        print(f"  {name:<52}{got:>14.4f}{truth:>14.4f}{r:>9.4f}{'' if ok else '   <-- beyond the tolerance'}")
    return all(ok for *_, ok in rows)


def measure_ofi_tcp(lab, tmp, expect_Bps):
    common = ["--transport", "ofi", "--provider", "tcp"]
    qp, qc = qperf_bw(lab, tmp)
    before = lab.tbf(lab.b)
    with SsSampler(lab.b) as ss:
        flood = run_pair(lab, common, ["--bench", "flood", "--sizes", "8192,32768,65536", "--messages", "100",
                                       "--bell-runs", "3", "--flood-overlap", "no", "--flood-queue", "fixed",
                                       "--runs", "1"],
                         tmp, "ofi-flood")
    after = lab.tbf(lab.b)
    bw = run_pair(lab, common, ["--bench", "bw", "--sizes", "65536", "-n", "300", "--warmup", "30", "--runs", "2"], tmp, "ofi-bw")
    c = ss.best
    assert c, "ss saw no TCP connection in B during the flood"
    frame = c["pmtu"] + ETH_HDR  # a full segment's frame: MSS + (PMTU - MSS) + Ethernet header
    payload_Bps = tcp_rate(expect_Bps, c)
    G, gaps = flood_G(flood)
    n, bwB = bw_Bps(bw)
    sent = after["bytes"] - before["bytes"]
    pkts = after["packets"] - before["packets"]
    print(f"ofi tcp: tbf rate {lab.tbf(lab.b)['rate_Bps'] * 8 / 1e6:.3f} Mbit/s enforced, checked against "
          f"{expect_Bps * 8 / 1e6:.3f}; connection {c['conn']} ({c['cc']}): "
          f"MSS {c['mss']}, PMTU {c['pmtu']}: {frame - c['mss']} header bytes per {c['mss']}-byte segment "
          f"({c['pmtu'] - c['mss']} IP+TCP, of which {c['pmtu'] - c['mss'] - 40} TCP options; {ETH_HDR} Ethernet); payload rate {payload_Bps / 1e6:.4f} MB/s")
    print(f"  tbf counted {sent} bytes in {pkts} frames on B's egress during the flood ({sent / max(pkts, 1):.1f} "
          f"B a frame; full frames are {frame}), drops {after['drops'] - before['drops']}")
    print("  flood time per message (min over runs): " +
          ", ".join(f"{k} B {v / 1e3:.1f} us (wire {k * 1e9 / payload_Bps / 1e3:.1f})" for k, v in sorted(gaps.items())))
    rows = []
    check(rows, "flood G (ns/byte)", G, 1e9 / payload_Bps, "time")
    check(rows, f"bw {n} B, best run's average (MB/s, 10^6 B)", bwB / 1e6, payload_Bps / 1e6, "rate")
    check(rows, "qperf tcp_bw -m 64k (MB/s, 10^6 B)", qp / 1e6, tcp_rate(expect_Bps, qc) / 1e6, "rate")
    return rows, {"G_ns": G, "G_truth_ns": 1e9 / payload_Bps, "bw_Bps": bwB, "qperf_Bps": qp,
                  "payload_Bps": payload_Bps, "mss": c["mss"], "pmtu": c["pmtu"]}


# Over net_af_packet with qdisc_bypass=0 the sender outruns its socket's send buffer (tbf holds the frames
# it charges), and DPDK 22.11's PMD then leaves frames in its ring until the next sendto: the transport
# kicks them on idle polls (dpdk/transport.cpp, kick_stranded); before that a flood here always stopped
# after ~1,300 frames as "peer lost", or, with few credits, lost about 1 ms a message. --loss-timeout: a
# shaped link is silent while a credit window drains (256 messages of 32 KiB at 100 Mbit/s: 0.7 s), longer
# than the 50 ms a lossy NI is given by default, after which every flood run was void as lost.
# NOT REGISTERED with ctest yet (tests/dpdk/CMakeLists.txt). Measured here with the kick, 100 Mbit/s, MTU
# 576, G's ratio to the wire and bw's: on a quiet VM (load < 3) 0.993, 0.993, 1.002, 1.000, 0.996 and bw
# 0.959-1.000 (one G at 1.034, one at 0.927 and one at 0.704 from a stalled small size); while four
# compilers shared the two cores (load 6-7), 10 of 10 runs failed: G 1.08-1.88, bw 0.63-0.95, and one run
# of 10 stopped as "peer lost" (19 one-way requests unacknowledged) even with the kick. The sender is a
# busy-polling process that must be on a core to move frames from its ring into a 208 KiB send buffer
# (about 7 ms of this wire); kernel TCP's buffers are megabytes and its work runs in softirq, so qperf
# and ofi tcp hold the rate under the same load. What still stalls is not known.
def measure_dpdk(lab, tmp, expect_Bps):
    mtu = lab.mtu(lab.a)
    chunk = mtu - wirehdr_bytes()
    frame = chunk + wirehdr_bytes() + ETH_HDR
    # Whole chunks, so every frame of a message is full: about 4, 12 and 32 KiB. Not 64 KiB as over ofi:
    # its 117 frames of 590 bytes fill the PMD's 512-frame tx ring in four messages, and the sender then
    # sleeps in the PMD's poll() for ring room; one run here read 64 KiB 12% over the wire while 8 and
    # 32 KiB were within 2-4%.
    sizes = [chunk * k for k in (round(4096 / chunk), round(12288 / chunk), 32768 // chunk)]
    hugefree = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                hugefree = int(line.split()[1])

    def common(dev):
        return ["--transport", "dpdk", "--mtu", str(mtu), "--loss-timeout", "5",
                "--eal", f"--no-pci --vdev=net_af_packet0,iface={dev},qdisc_bypass=0"] + \
               (["--no-huge"] if hugefree < 128 else [])

    qp, qc = qperf_bw(lab, tmp)
    before = lab.tbf(lab.b)
    port = 18700 + os.getpid() % 500
    out = {}
    # 300 messages and the best of 5 runs: a flood of 100 messages of 4 KiB lasts 34 ms, and one stall of a
    # few ms in each of 3 runs once read that size 11% slow, which tilted G 7% low.
    for name, args in (("flood", ["--bench", "flood", "--sizes", ",".join(map(str, sizes)), "--messages", "300",
                                  "--bell-runs", "5", "--flood-overlap", "no", "--flood-queue", "fixed",
                                       "--runs", "1"]),
                       ("bw", ["--bench", "bw", "--sizes", str(sizes[-1]), "-n", "300", "--warmup", "30", "--runs", "2"])):
        o = os.path.join(tmp, f"dpdk-{name}.json")
        with open(os.path.join(tmp, f"dpdk-{name}-server.log"), "w") as log:
            srv = lab.spawn(lab.a, [BIN, "server", "--cpu", "1", "--port", str(port), "-q"] + common(lab.dev[lab.a]),
                            log)
            time.sleep(0.2)
            cl = subprocess.run(in_ns(lab.b, [BIN, "client", ADDR_A, "--cpu", "0", "--port", str(port), "-q",
                                              "--json", o] + common(lab.dev[lab.b]) + args),
                                capture_output=True, text=True, timeout=120)
            try:
                srv.wait(timeout=20)
            except subprocess.TimeoutExpired:
                srv.kill()
        assert cl.returncode == 0, f"logpbench client (dpdk {name}) exited {cl.returncode}:\n{cl.stdout}{cl.stderr}"
        out[name] = load(o)
        if name == "flood":
            after = lab.tbf(lab.b)
    t = out["flood"]["meta"]["transport"]
    assert t["driver"] == "net_af_packet", t["driver"]
    assert t["chunk_bytes"] == chunk, (t["chunk_bytes"], chunk)  # the code cuts data as read above
    payload_Bps = expect_Bps * chunk / frame
    G, gaps = flood_G(out["flood"])
    n, bwB = bw_Bps(out["bw"])
    msg_wire = n // chunk * frame + ETH_HDR + wirehdr_bytes() + 64  # the chunks, then the 64-byte AM frame
    sent = after["bytes"] - before["bytes"]
    pkts = after["packets"] - before["packets"]
    print(f"dpdk af_packet: tbf rate {lab.tbf(lab.b)['rate_Bps'] * 8 / 1e6:.3f} Mbit/s enforced, checked against "
          f"{expect_Bps * 8 / 1e6:.3f}; MTU {mtu}: {chunk}-byte chunks in {frame}-byte frames "
          f"({wirehdr_bytes()} WireHdr + {ETH_HDR} Ethernet); payload rate {payload_Bps / 1e6:.4f} MB/s")
    print(f"  tbf counted {sent} bytes in {pkts} frames on B's egress during the flood ({sent / max(pkts, 1):.1f} "
          f"B a frame), drops {after['drops'] - before['drops']}")
    print("  flood time per message (min over runs): " +
          ", ".join(f"{k} B {v / 1e3:.1f} us (wire {(k // chunk * frame + 98) * 1e9 / expect_Bps / 1e3:.1f})"
                    for k, v in sorted(gaps.items())))
    rows = []
    check(rows, "flood G (ns/byte)", G, 1e9 / payload_Bps, "time")
    check(rows, f"bw {n} B, best run's average (MB/s, 10^6 B)", bwB / 1e6, expect_Bps * n / msg_wire / 1e6, "rate")
    check(rows, "qperf tcp_bw -m 64k (MB/s, 10^6 B; TCP's payload rate)", qp / 1e6, tcp_rate(expect_Bps, qc) / 1e6, "rate")
    return rows, {"G_ns": G, "G_truth_ns": 1e9 / payload_Bps, "bw_Bps": bwB, "qperf_Bps": qp,
                  "payload_Bps": payload_Bps}


def prerequisites(test):
    if not shutil.which("qperf"):
        raise Skip("qperf is not installed (scripts/setup installs it)")
    if not shutil.which("tc") or not shutil.which("ss"):
        raise Skip("tc or ss (iproute2) is missing")
    if test == "ofi_tcp":
        p = subprocess.run(["fi_info", "-p", "tcp"], capture_output=True, text=True) if shutil.which("fi_info") \
            else None
        if p is None or p.returncode != 0 or "provider:" not in p.stdout:
            raise Skip("libfabric's tcp provider is not listed by fi_info -p tcp")
    else:
        import glob
        if not glob.glob("/usr/lib/*/dpdk/pmds-*/librte_net_af_packet.so*") + \
                glob.glob("/usr/local/lib*/**/librte_net_af_packet.so*", recursive=True):
            raise Skip("DPDK's net_af_packet PMD is not installed")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test", choices=["ofi_tcp", "dpdk_af_packet"])
    ap.add_argument("--mbit", type=float, default=100)
    ap.add_argument("--expect-mbit", type=float)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--mtu", type=int, default=MTU)
    a = ap.parse_args(sys.argv[3:])

    def stop(sig, _):
        raise Stop(f"signal {sig}")

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stop)
    t0 = time.time()
    try:
        prerequisites(a.test)
        tmp = tempfile.mkdtemp(prefix="logpb-tbf-")
        with Lab(a.mbit, a.mtu) as lab:
            enforced = lab.tbf(lab.a)["rate_Bps"]
            assert enforced == lab.tbf(lab.b)["rate_Bps"]
            expect = a.expect_mbit * 1e6 / 8 if a.expect_mbit else enforced
            measure = measure_ofi_tcp if a.test == "ofi_tcp" else measure_dpdk
            results, ok = [], True
            for i in range(a.repeat):
                rows, fig = measure(lab, tmp, expect)
                ok = report(rows) and ok
                results.append(fig)
            if a.repeat > 1:
                for k in ("G_ns", "bw_Bps", "qperf_Bps"):
                    v = [r[k] for r in results]
                    print(f"  {k} over {len(v)}: min {min(v):.4f} max {max(v):.4f} "
                          f"(spread {(max(v) - min(v)) / min(v) * 100:.2f}%)")
    except Skip as e:
        print(f"skipped: {e}")
        sys.exit(SKIP)
    except Stop as e:
        print(f"interrupted ({e}): the namespaces and their processes are removed")
        sys.exit(130)
    print(f"wall time {time.time() - t0:.1f} s")
    assert ok, (f"a figure is more than {SLACK_FAST * 100:.0f}% faster or {SLACK_SLOW * 100:.0f}% slower than the rate "
                f"tbf enforces (see the table above)")
    print(f"{a.test}: ok")


if __name__ == "__main__":
    main()
