#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>

#include "app/method.hpp"
#include "common/errors.hpp"
#include "common/ranks.hpp"
#include "common/results.hpp"

namespace po = boost::program_options;

namespace logpb::app {

namespace {

bool given(const po::variables_map& vm, const char* k) { return vm.count(k) && !vm[k].defaulted(); }

// -a, --sizes, -s and -n: which method takes them, and that they do not contradict one another. -a fills
// the sizes and grows the segment so that its largest size (8 MiB) fits half of it, as every bulk size must.
void check_sizes_options(Options& o, const po::variables_map& vm, const std::string& sizes_arg) {
  const MethodInfo* m = find_method(o.bench);
  o.size_given = given(vm, "size");
  o.iterations_given = given(vm, "iters");
  if (m->scope == Scope::job && m->name == "quick") {
    for (const char* k : {"all", "sizes", "size", "iters", "warmup", "runs"})
      if (given(vm, k))
        throw UsageError(std::string("--") + k + ": logpbench quick sets its own budgets (recorded in the results' quick.budgets); "
                         "run --bench pingpong, bw or signature for your own");
    return;
  }
  if (m->scope == Scope::job && m->name == "agree") {
    for (const char* k : {"all", "sizes", "size", "iters", "warmup", "eps", "no-saturation-compare", "max-burst",
                          "bursts", "deltas", "delta-factors", "max-samples", "max-point-seconds"})
      if (given(vm, k))
        throw UsageError(std::string("--") + k + ": logpbench agree sets it for each method (recorded in the results' "
                         "agree.budgets); --runs, --messages and --bell-runs raise its budgets, or run the methods "
                         "themselves for your own");
    // Budgets that keep the four methods within about a minute on shm, unless given.
    if (!given(vm, "runs")) o.runs = 1;
    if (!given(vm, "messages")) o.messages = 2000;
    if (!given(vm, "bell-runs")) o.bell_runs = 3;
    return;
  }
  // pingpong sweeps a list; bw and the bulk methods have default sizes that -a replaces.
  const bool over_sizes = m->scope == Scope::link && (!m->default_sizes.empty() || m->name == "pingpong");
  if (o.all_sizes) {
    if (!sizes_arg.empty()) throw UsageError("-a runs every size 2 .. 2^23: give it or --sizes, not both");
    if (o.size_given) throw UsageError("-a runs every size 2 .. 2^23: give it or -s, not both");
    if (!over_sizes)
      throw UsageError("-a (every size 2 .. 2^23) is for a method over message sizes (pingpong, bw, bulk, flood, overlap, "
                       "availability), not --bench " + o.bench);
    o.sizes = all_sizes();
    o.segment_bytes = 2 * o.sizes.back();
  }
  if (!sizes_arg.empty() && o.size_given && (o.bench == "pingpong" || o.bench == "bw"))
    throw UsageError("-s is one size and --sizes a list: give one of them");
}

}  // namespace

bool parse_options(int argc, const char* const* argv, Options& o) {
  po::options_description general("Run");
  std::string cpus_arg;
  std::string bursts, deltas, factors, estimator = "median", burst_time = "auto", sizes_arg;
  general.add_options()
      ("help,h", "this text")
      ("version", "print the version")
      ("transport", po::value(&o.transport)->default_value(o.transport), "shm | verbs | dpdk | mpi (mpi: under mpirun/srun only)")
      ("bench", po::value(&o.bench)->default_value(o.bench), bench_help().c_str())
      ("emulate", po::value(&o.emulate_spec), "shm only: emulated NI, e.g. \"os=1.4us,or=2.2us,g=7.6us,L=6.3us,C=32\"")
      ("json", po::value(&o.json_path), "write results to this file (atomically; checkpointed during the run)")
      ("csv", po::value(&o.csv_path), "also write the run's table as CSV (atomically): pingpong's latency table, bw's "
                                       "bandwidth table, else the parameters; a second table goes to FILE-NAME.csv")
      ("raw", po::bool_switch(&o.raw), "also store every raw sample in the JSON")
      ("runs", po::value(&o.runs)->default_value(o.runs), "repeat the whole measurement; parameters get run-to-run spread")
      ("quiet,q", po::bool_switch(&o.quiet), "no progress line");
  po::options_description place("Placement and connection");
  place.add_options()
      ("cpu", po::value(&o.cpu)->default_value(o.cpu), "core of this process (local: rank 0, the client)")
      ("peer-cpu", po::value(&o.peer_cpu)->default_value(o.peer_cpu), "local, 2 ranks: core of the forked peer")
      ("ranks,N", po::value(&o.ranks)->default_value(o.ranks), "local: processes in the job (forked onto --cpus)")
      ("cpus", po::value(&cpus_arg), "each rank's core, e.g. 0,1,0,1 (local: by rank; launched: by rank on its host); "
                                      "default: local 2 ranks --cpu/--peer-cpu, else rank r on the r-th allowed core")
      ("rendezvous", po::value(&o.rendezvous), "under mpirun/srun: HOST:PORT where rank 0 listens (default: a rendezvous file)")
      ("rendezvous-dir", po::value(&o.rendezvous_dir), "under mpirun/srun: shared directory for the rendezvous file "
                                                       "(default: $SLURM_SUBMIT_DIR, else the current directory)")
      ("port,p", po::value(&o.port)->default_value(o.port), "TCP port of the out-of-band bootstrap")
      ("timeout", po::value(&o.timeout_s)->default_value(o.timeout_s), "seconds without progress before the peer is declared lost")
      ("connect-timeout", po::value(&o.connect_timeout_s)->default_value(o.connect_timeout_s), "seconds to wait for the peer to connect")
      ("allow-variant-tsc", po::bool_switch(&o.allow_variant_tsc), "measure even without an invariant TSC")
      ("probe-ms", po::value(&o.probe_ms)->default_value(o.probe_ms),
       "ms this core is watched for interruptions before the run (half that after it): the 'core stayed available' "
       "check and the signature's automatic --max-burst-time read it; shorter starts sooner and sees fewer of them");
  po::options_description verbs("verbs transport (perftest's -d, -i, -x)");
  std::string gid = "auto";
  int ib_mtu_bytes = 0;
  verbs.add_options()
      ("ib-dev,d", po::value(&o.ib_dev), "RDMA device (default: the first)")
      ("ib-port,i", po::value(&o.ib_port)->default_value(o.ib_port), "device port")
      ("gid-index,x", po::value(&gid)->default_value(gid), "GID index, or auto (a RoCE v2 IPv4 GID)")
      ("inline", po::value(&o.inline_bytes)->default_value(o.inline_bytes), "inline data asked of the QP (0: send from memory)")
      ("signal-every", po::value(&o.signal_every)->default_value(o.signal_every), "one signaled send in this many")
      ("recv-batch", po::value(&o.recv_batch)->default_value(o.recv_batch), "receives re-posted per chained post")
      ("sq-depth", po::value(&o.sq_depth)->default_value(o.sq_depth), "send queue depth")
      ("rq-depth", po::value(&o.rq_depth)->default_value(o.rq_depth), "receive queue depth (pre-posted receives)")
      ("ib-mtu", po::value(&ib_mtu_bytes)->default_value(0), "path MTU in bytes (256..4096; 0: the port's active MTU)")
      ("event", po::bool_switch(&o.event_mode), "wait for completions on a completion channel instead of busy polling")
      ("ud", po::bool_switch(&o.ud), "an unreliable datagram QP instead of RC (small AMs only: pingpong, signature)");
  po::options_description dpdk("DPDK transport");
  dpdk.add_options()
      ("eal", po::value(&o.eal), "EAL arguments, passed through (e.g. \"--vdev=net_af_xdp0,iface=veth0 -l 1\")")
      ("dpdk-port", po::value(&o.dpdk_port)->default_value(o.dpdk_port), "ethdev port id (-1: the only one)")
      ("burst", po::value(&o.burst)->default_value(o.burst), "rx burst size")
      ("tx-burst", po::value(&o.tx_burst)->default_value(o.tx_burst), "bw, flood: hand a stream's sends to the PMD this many at a time (1: each send in its own call, as every other method does)")
      ("rx-ring", po::value(&o.rx_ring)->default_value(o.rx_ring), "rx descriptors")
      ("tx-ring", po::value(&o.tx_ring)->default_value(o.tx_ring), "tx descriptors")
      ("mtu", po::value(&o.mtu)->default_value(o.mtu), "port MTU; bulk data is cut to it (0: the port's default)")
      ("drop-rate", po::value(&o.drop_rate)->default_value(o.drop_rate), "inject loss: drop this fraction of received frames")
      ("dup-rate", po::value(&o.dup_rate)->default_value(o.dup_rate), "inject duplicates: receive this fraction of frames twice")
      ("reorder-rate", po::value(&o.reorder_rate)->default_value(o.reorder_rate), "inject reordering: hold this fraction of received frames back until the next one has passed")
      ("no-huge", po::bool_switch(&o.no_huge), "run the EAL without hugepages (slower; says so in meta)")
      ("reflector", po::bool_switch(&o.reflector), "local: the peer is a reflector such as testpmd macswap, not logpbench")
      ("link-timeout", po::value(&o.link_timeout_s)->default_value(o.link_timeout_s), "seconds to wait for the link")
      ("loss-timeout", po::value(&o.loss_timeout_s)->default_value(o.loss_timeout_s), "seconds of silence after which outstanding messages count as lost (-1: 50 ms on lossy NIs, never on shm)");
  po::options_description mpi("MPI transport (run under mpirun or srun)");
  mpi.add_options()
      ("mpi-bulk", po::value(&o.mpi_bulk)->default_value(o.mpi_bulk), "bulk store/get: send (two-sided messages) | put (MPI_Put/MPI_Get in a passive-target epoch)")
      ("mpi-send", po::value(&o.mpi_send)->default_value(o.mpi_send), "the call that sends an AM's message: send (MPI_Send) | isend (MPI_Isend, a pool in flight) | ssend (MPI_Ssend), as Kielmann et al.'s LogP/MPI")
      ("mpi-recv", po::value(&o.mpi_recv)->default_value(o.mpi_recv), "how it is received: irecv (a ring of pre-posted MPI_Irecv) | recv (MPI_Improbe + MPI_Mrecv, nothing posted ahead)")
      ("mpi-inline", po::value(&o.mpi_inline)->default_value(o.mpi_inline), "bytes of payload sent in the frame's own message (one MPI message per AM); larger payloads are a message of their own")
      ("mpi-ring", po::value(&o.mpi_ring)->default_value(o.mpi_ring), "pre-posted MPI_Irecv (irecv), or messages taken in during a blocking send (recv)")
      ("mpi-pool", po::value(&o.mpi_pool)->default_value(o.mpi_pool), "MPI_Isend in flight at most (power of two)")
      ("mpi-settings", po::value(&o.mpi_settings)->default_value(o.mpi_settings), "on: record the library's settings (eager limits, pml, btl) read through MPI_T in meta.mpi | off: skip it (MPI_T opens every MCA component, which can take 200 ms; meta.startup_ms.mpi_t_settings)");
  po::options_description method("Methods");
  method.add_options()
      ("iters,n", po::value(&o.iterations)->default_value(o.iterations), "ping-pong iterations (timed)")
      ("warmup", po::value(&o.warmup)->default_value(o.warmup), "ping-pong iterations before timing")
      ("size,s", po::value(&o.size)->default_value(o.size), "ping-pong message bytes: 0 = one small AM (64-byte frame), n = a bulk store of n bytes")
      ("max-burst", po::value(&o.max_burst)->default_value(o.max_burst), "signature: largest M")
      ("max-burst-time", po::value(&burst_time)->default_value(burst_time), "signature: longest timed burst, or auto: 0.25 x this core's measured interval between interruptions (ticks, VM exits), within 100us..2ms; longer M are skipped unless the steady state needs them")
      ("bursts", po::value(&bursts), "signature: explicit M list, e.g. 1,2,4,8")
      ("deltas", po::value(&deltas), "signature: Delta list with units, e.g. 0,2us,8us (default: automatic)")
      ("delta-factors", po::value(&factors), "signature: automatic Deltas as multiples of g (default 0.5,1,2,4)")
      ("window", po::value(&o.window)->default_value(o.window), "AM outstanding window: the network capacity (an emulation's C overrides)")
      ("ring", po::value(&o.ring)->default_value(o.ring), "shm: slots per direction (power of two)")
      ("credits", po::value(&o.credits)->default_value(o.credits), "one-way requests in flight before the receiver returns credits (flood, saturation, overlap, availability)")
      ("ci", po::value(&o.rule.rel_precision)->default_value(o.rule.rel_precision, "0.05"), "stop rule: relative 95% half-width to reach")
      ("batch", po::value(&o.rule.batch)->default_value(o.rule.batch), "stop rule: samples per batch")
      ("min-samples", po::value(&o.rule.min_samples)->default_value(o.rule.min_samples), "stop rule: fewest samples per point")
      ("max-samples", po::value(&o.rule.max_samples)->default_value(o.rule.max_samples), "stop rule: cap per point")
      ("max-point-seconds", po::value(&o.rule.max_seconds)->default_value(o.rule.max_seconds), "stop rule: time cap per point")
      ("estimator", po::value(&estimator)->default_value(estimator), "point estimate: median | mean")
      ("sizes", po::value(&sizes_arg), "message sizes in bytes for pingpong, bw, bulk, flood, overlap, availability (e.g. 8,512,4096)")
      ("all,a", po::bool_switch(&o.all_sizes), "every size 2 .. 2^23 bytes, as perftest's -a (pingpong, bw and the other "
                                               "methods over sizes); the segment grows to 16 MiB")
      ("queue-depth", po::value(&o.queue_depth)->default_value(o.queue_depth), "flood: messages kept in flight (Bell et al.)")
      ("messages", po::value(&o.messages)->default_value(o.messages), "flood/overlap: messages per run")
      ("bell-runs", po::value(&o.bell_runs)->default_value(o.bell_runs), "flood/overlap: runs; the minimum is reported, the median beside it")
      ("eps", po::value(&o.eps)->default_value(o.eps), "kielmann: relative precision and saturation criterion")
      ("saturation-compare", "kielmann: also time g(m) by saturation at every size (their Table 2; minutes)")
      ("no-saturation-compare", "kielmann: skip that comparison (the default)")
      ("base-threshold", po::value(&o.base_threshold)->default_value(o.base_threshold), "availability: base_t threshold (1.02-1.05)")
      ("stop-threshold", po::value(&o.stop_threshold)->default_value(o.stop_threshold), "availability: stop threshold (1.5-2)");
  // Each method's own options, from its descriptor; an option two methods share is listed once.
  po::options_description owned("Options of single methods");
  std::map<std::string, std::string> method_values;
  std::map<std::string, std::vector<std::string>> owners;
  std::vector<const MethodOption*> first;
  for (const auto& m : all_methods())
    for (const auto& mo : m.options) {
      auto& who = owners[mo.name];
      if (who.empty()) first.push_back(&mo);
      who.push_back(m.name);
    }
  for (const MethodOption* mo : first) {
    std::string who;
    for (const auto& n : owners[mo->name]) who += (who.empty() ? "" : ", ") + n;
    method_values[mo->name] = mo->default_value;
    owned.add_options()(mo->name, po::value(&method_values[mo->name])->default_value(mo->default_value)->value_name(mo->value_name),
                        (who + ": " + mo->help).c_str());
  }
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&o.mode))("host", po::value(&o.host));
  po::positional_options_description pos;
  pos.add("mode", 1).add("host", 1);
  po::options_description all;
  all.add(general).add(place).add(verbs).add(dpdk).add(mpi).add(method).add(owned).add(hidden);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: logpbench [local | server | client HOST] [options]\n"
                 "With no arguments: local --transport shm --bench signature (the embedded default).\n\n"
              << general << '\n' << place << '\n' << method << '\n' << owned << '\n' << verbs << '\n' << dpdk << '\n' << mpi;
    return false;
  }
  if (vm.count("version")) {
    std::cout << "logpbench " << version_string() << '\n';
    return false;
  }

  o.mode_given = vm.count("mode") > 0;
  if (o.mode != "local" && o.mode != "server" && o.mode != "client")
    throw UsageError("mode must be local, server or client, not '" + o.mode + "'");
  if (!cpus_arg.empty()) {
    for (const auto& x : split_list(cpus_arg)) {
      std::size_t used = 0;
      int c = -1;
      try {
        c = std::stoi(x, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != x.size() || c < 0 || c > 4095) throw UsageError("--cpus: '" + x + "' is not a core number");
      o.cpus.push_back(c);
    }
  }
  if (o.ranks < 1 || o.ranks > 4096) throw UsageError("-N/--ranks must be in 1..4096");
  if (vm.count("ranks") && !vm["ranks"].defaulted() && o.mode_given && o.mode != "local")
    throw UsageError("-N is for local jobs: server/client is a pair, and a launcher (mpirun -np, srun -n) sets the size");
  if (o.mode == "client" && o.host.empty()) throw UsageError("client needs the server's address: logpbench client HOST");
  if (o.mode != "client" && !o.host.empty()) throw UsageError("unexpected argument '" + o.host + "' (only client takes a HOST)");
  if (o.transport != "shm" && o.transport != "verbs" && o.transport != "dpdk" && o.transport != "mpi")
    throw UsageError("--transport must be shm, verbs, dpdk or mpi, not '" + o.transport + "'");
  if (!find_method(o.bench)) throw UsageError("--bench must be " + method_names(", ", " or ") + ", not '" + o.bench + "'");
  o.method_args = method_values;
  for (const auto& [name, who] : owners) {
    if (!vm.count(name) || vm[name].defaulted() || std::find(who.begin(), who.end(), o.bench) != who.end()) continue;
    std::string list;
    for (std::size_t i = 0; i < who.size(); ++i) list += (i ? " or " : "") + who[i];
    throw UsageError("--" + name + " belongs to --bench " + list + ", not " + o.bench);
  }
  if (const MethodInfo* m = find_method(o.bench); m->check) m->check(o);
  check_sizes_options(o, vm, sizes_arg);
  if (!o.csv_path.empty()) {  // refused now, not after the run
    const std::filesystem::path dir = std::filesystem::path(o.csv_path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
      throw UsageError("--csv " + o.csv_path + ": no directory " + dir.string() + " to write it in");
  }
  if (!sizes_arg.empty()) {
    for (int v : parse_int_list("--sizes", sizes_arg)) o.sizes.push_back(static_cast<std::uint32_t>(v));
    if (o.sizes.back() > o.segment_bytes / 2)
      throw UsageError("--sizes: " + std::to_string(o.sizes.back()) + " bytes exceed half the " +
                       std::to_string(o.segment_bytes) + "-byte segment");
  }
  if (vm.count("saturation-compare") && vm.count("no-saturation-compare"))
    throw UsageError("--saturation-compare and --no-saturation-compare contradict each other: give one");
  o.compare_saturation = vm.count("saturation-compare") != 0;
  if (o.size > o.segment_bytes / 2) throw UsageError("--size exceeds half the " + std::to_string(o.segment_bytes) + "-byte segment");
  if (!o.emulate_spec.empty()) {
    if (o.transport == "mpi")
      throw UsageError("--emulate works only with --transport shm: MPI has no emulated NI (measure MPI as it is, and "
                       "the emulated machines over shm)");
    if (o.transport != "shm") throw UsageError("--emulate works only with --transport shm");
    if (o.mode == "server") throw UsageError("--emulate is given to the client; the server takes it from there");
    o.emulation = parse_emulation(o.emulate_spec);
    if (o.emulation.capacity > 0) o.window = o.emulation.capacity;
  }
  o.rule.estimator = parse_estimator(estimator);
  if (burst_time == "auto") {
    o.max_burst_time_ns = 0;  // set from the measured interruptions (main)
  } else {
    o.max_burst_time_ns = parse_duration_ns(burst_time);
    if (!(o.max_burst_time_ns > 0)) throw UsageError("--max-burst-time must be positive (or auto)");
  }
  if (!bursts.empty()) o.bursts = parse_int_list("--bursts", bursts);
  if (!deltas.empty() && deltas != "auto") {
    double last = -1;
    for (const auto& x : split_list(deltas)) {
      const double d = parse_duration_ns(x);
      if (d < 0 || d <= last) throw UsageError("--deltas must be ascending non-negative durations");
      o.deltas_ns.push_back(d);
      last = d;
    }
  }
  if (!factors.empty()) {
    o.delta_factors.clear();
    for (const auto& x : split_list(factors)) {
      double f = 0;
      try {
        f = std::stod(x);
      } catch (const std::exception&) {
        f = -1;
      }
      if (!(f > 0)) throw UsageError("--delta-factors: '" + x + "' is not a positive number");
      o.delta_factors.push_back(f);
    }
  }
  auto positive = [](const char* name, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))
    {
      char range[96];
      std::snprintf(range, sizeof range, " must be in [%g, %g]", lo, hi);
      throw UsageError(std::string("--") + name + range);
    }
  };
  positive("iters", o.iterations, 1, 1e8);
  positive("queue-depth", o.queue_depth, 1, 4096);
  positive("messages", o.messages, 1, 1e8);
  positive("bell-runs", o.bell_runs, 1, 1000);
  positive("eps", o.eps, 1e-4, 0.5);
  positive("base-threshold", o.base_threshold, 1.001, 2);
  positive("stop-threshold", o.stop_threshold, o.base_threshold, 100);
  positive("warmup", o.warmup, 0, 1e8);
  positive("max-burst", o.max_burst, 1, 1 << 20);
  positive("window", o.window, 1, 1 << 16);
  positive("credits", o.credits, 2, 1 << 16);
  positive("runs", o.runs, 1, 1000);
  positive("timeout", o.timeout_s, 0.1, 1e6);
  positive("probe-ms", o.probe_ms, 10, 10000);
  positive("connect-timeout", o.connect_timeout_s, 0.1, 1e6);
  positive("ci", o.rule.rel_precision, 1e-4, 1);
  positive("batch", o.rule.batch, 2, 1e6);
  positive("min-samples", o.rule.min_samples, 2, 1e8);
  positive("max-samples", o.rule.max_samples, o.rule.min_samples, 1e8);
  positive("max-point-seconds", o.rule.max_seconds, 0.001, 1e6);
  positive("cpu", o.cpu, 0, 4095);
  positive("peer-cpu", o.peer_cpu, 0, 4095);
  if (o.mode == "local" && o.ranks == 2 && o.cpus.empty() && o.cpu == o.peer_cpu)
    throw UsageError("--cpu and --peer-cpu are the same core: two busy-polling endpoints need two cores");
  if (o.transport != "dpdk") {
    for (const char* k : {"eal", "reflector", "drop-rate", "dup-rate", "reorder-rate", "no-huge"})
      if (vm.count(k) && !vm[k].defaulted()) throw UsageError(std::string("--") + k + " belongs to --transport dpdk");
  }
  if (gid == "auto") {
    o.gid_index = -1;
  } else {
    std::size_t used = 0;
    try {
      o.gid_index = std::stoi(gid, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != gid.size() || o.gid_index < 0 || o.gid_index > 255)
      throw UsageError("--gid-index must be auto or an index 0..255, not '" + gid + "'");
  }
  switch (ib_mtu_bytes) {
    case 0: o.ib_mtu = 0; break;
    case 256: o.ib_mtu = 1; break;
    case 512: o.ib_mtu = 2; break;
    case 1024: o.ib_mtu = 3; break;
    case 2048: o.ib_mtu = 4; break;
    case 4096: o.ib_mtu = 5; break;
    default: throw UsageError("--ib-mtu must be 256, 512, 1024, 2048 or 4096");
  }
  if (o.transport != "verbs")
    for (const char* k : {"ib-dev", "event", "ud"})
      if (vm.count(k) && !vm[k].defaulted()) throw UsageError(std::string("--") + k + " belongs to --transport verbs");
  positive("inline", o.inline_bytes, 0, 4096);
  positive("signal-every", o.signal_every, 1, 4096);
  positive("recv-batch", o.recv_batch, 1, 512);
  positive("sq-depth", o.sq_depth, 16, 16384);
  positive("rq-depth", o.rq_depth, 16, 16384);
  if (o.ud && ((o.bench != "pingpong" && o.bench != "signature") || o.size > 0))
    throw UsageError("--ud carries small AMs only (--bench pingpong or signature, no --size): bulk needs RDMA on RC");
  if (o.transport == "verbs" && o.rq_depth < 2 * o.window + o.recv_batch)
    throw UsageError("--rq-depth must cover twice --window plus --recv-batch, or receives could run out");
  if (o.reflector && o.mode != "local") throw UsageError("--reflector is for local mode: the reflector is the peer");
  positive("drop-rate", o.drop_rate, 0, 0.5);
  positive("dup-rate", o.dup_rate, 0, 0.5);
  positive("reorder-rate", o.reorder_rate, 0, 0.5);
  positive("burst", o.burst, 1, 512);
  positive("tx-burst", o.tx_burst, 1, 128);
  if (o.tx_burst > 1 && o.transport != "dpdk") throw UsageError("--tx-burst belongs to --transport dpdk");
  if (o.tx_burst > 1 && o.bench != "bw" && o.bench != "flood")
    throw UsageError("--tx-burst batches a stream's sends, so a send is no longer paid in the call that makes it: only "
                     "--bench bw and flood, which measure rates, take it");
  positive("rx-ring", o.rx_ring, 16, 65536);
  positive("tx-ring", o.tx_ring, 16, 65536);
  positive("mtu", o.mtu, 0, 65535);
  positive("link-timeout", o.link_timeout_s, 0.01, 3600);
  if (o.loss_timeout_s != -1) positive("loss-timeout", o.loss_timeout_s, 0, 3600);
  if (o.transport != "mpi") {
    for (const char* k : {"mpi-bulk", "mpi-send", "mpi-recv", "mpi-inline", "mpi-ring", "mpi-pool", "mpi-settings"})
      if (vm.count(k) && !vm[k].defaulted()) throw UsageError(std::string("--") + k + " belongs to --transport mpi");
  } else {
    // MPI's ranks come from its launcher: without one there is no job to join (an MPI singleton would
    // measure nothing), so say so before anything starts.
    if (o.mode_given)
      throw UsageError("--transport mpi runs under a launcher (mpirun -np 2 logpbench --transport mpi ..., or "
                       "srun), with no mode: '" + o.mode + "' is for the other transports");
    if (!detect_launcher())
      throw UsageError("--transport mpi needs an MPI launcher: run it as mpirun -np 2 logpbench --transport mpi ... "
                       "(scripts/mpirun-lab -np 2 -- ...) or under srun; no OMPI_COMM_WORLD_*/PMIX_*/SLURM_* "
                       "variables are set");
    if (o.mpi_bulk != "send" && o.mpi_bulk != "put") throw UsageError("--mpi-bulk must be send or put, not '" + o.mpi_bulk + "'");
    if (o.mpi_send != "send" && o.mpi_send != "isend" && o.mpi_send != "ssend")
      throw UsageError("--mpi-send must be send, isend or ssend, not '" + o.mpi_send + "'");
    if (o.mpi_recv != "recv" && o.mpi_recv != "irecv")
      throw UsageError("--mpi-recv must be recv or irecv, not '" + o.mpi_recv + "'");
    if (o.mpi_settings != "on" && o.mpi_settings != "off")
      throw UsageError("--mpi-settings must be on or off, not '" + o.mpi_settings + "'");
    positive("mpi-inline", o.mpi_inline, 0, 1 << 20);
    positive("mpi-ring", o.mpi_ring, 2, 65536);
    positive("mpi-pool", o.mpi_pool, 2, 65536);
    if (o.mpi_pool & (o.mpi_pool - 1)) throw UsageError("--mpi-pool must be a power of two");
  }
  if (o.transport == "shm" && o.window * 2 > o.ring)
    throw UsageError("--ring must be at least twice --window so replies always find a free slot");

  for (const auto& [name, v] : vm) {
    const auto& a = v.value();
    if (a.type() == typeid(std::string)) o.flags[name] = v.as<std::string>();
    else if (a.type() == typeid(int)) o.flags[name] = v.as<int>();
    else if (a.type() == typeid(double)) o.flags[name] = v.as<double>();
    else if (a.type() == typeid(bool)) o.flags[name] = v.as<bool>();
    else if (a.type() == typeid(std::uint16_t)) o.flags[name] = v.as<std::uint16_t>();
    else if (a.type() == typeid(std::uint32_t)) o.flags[name] = v.as<std::uint32_t>();  // --size
    else o.flags[name] = "(recorded as given: unknown type)";
  }
  o.flags["window_effective"] = o.window;
  return true;
}

}  // namespace logpb::app
