#include "model.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "analysis/logpc.hpp"
#include "common/errors.hpp"
#include "common/results.hpp"

namespace po = boost::program_options;
using nlohmann::json;
namespace lm = logpb::analysis::logpc;

namespace logpb::app {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kKeys[] = {"o_s", "o_r", "L", "g", "G"};

struct Input {
  double v[5] = {kNaN, kNaN, kNaN, kNaN, kNaN};   // in kKeys' order
  double ci[5] = {kNaN, kNaN, kNaN, kNaN, kNaN};  // NaN: no interval given
  std::string why[5];                              // why missing
  lm::LogGP loggp() const { return {v[0], v[1], v[2], v[3], v[4]}; }
};

json load_json(const std::string& path, const std::string& what) {
  std::ifstream f(path);
  if (!f) throw UsageError(what + " " + path + ": cannot open (missing file?)");
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    throw UsageError(what + " " + path + ": not valid JSON (" + e.what() + ")");
  }
}

Input read_parameters(const json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("parameters") || !doc["parameters"].is_object())
    throw UsageError(path + ": no 'parameters' object: not a logpbench result with LogGP parameters");
  const json& ps = doc["parameters"];
  Input in;
  int found = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string k = kKeys[i];
    if (!ps.contains(k)) {
      in.why[i] = "not in " + path;
      continue;
    }
    const json& p = ps[k];
    if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number()) {
      in.why[i] = "no value in " + path + (p.is_object() && p.contains("error") && p["error"].is_string()
                                                  ? " (" + p["error"].get<std::string>() + ")" : std::string());
      continue;
    }
    in.v[i] = p["value_ns"].get<double>();
    if (p.contains("ci95_ns") && p["ci95_ns"].is_number()) in.ci[i] = p["ci95_ns"].get<double>();
    ++found;
  }
  if (found == 0) throw UsageError(path + ": none of o_s, o_r, L, g, G has a value: nothing to predict from");
  return in;
}

lm::Network parse_topology(const std::string& spec) {
  if (spec == "crossbar") return lm::crossbar(0);
  const std::string pre = "kary:";
  if (spec.rfind(pre, 0) != 0)
    throw UsageError("--topology must be crossbar or kary:k=K,n=N[,wrap=mesh|torus][,channels=bi|uni], not '" + spec + "'");
  int k = 0, n = 0;
  bool torus = false, bi = true;
  std::stringstream ss(spec.substr(pre.size()));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
    auto integer = [&] {
      std::size_t used = 0;
      int x = 0;
      try { x = std::stoi(val, &used); } catch (const std::exception&) { used = 0; }
      if (used != val.size() || val.empty()) throw UsageError("--topology " + spec + ": " + key + "='" + val + "' is not an integer");
      return x;
    };
    if (key == "k") k = integer();
    else if (key == "n") n = integer();
    else if (key == "wrap" && (val == "mesh" || val == "torus")) torus = val == "torus";
    else if (key == "channels" && (val == "bi" || val == "uni")) bi = val == "bi";
    else throw UsageError("--topology " + spec + ": unknown or bad item '" + item + "' (k=, n=, wrap=mesh|torus, channels=bi|uni)");
  }
  if (k < 2 || n < 1) throw UsageError("--topology " + spec + ": needs k >= 2 and n >= 1");
  if (k > 1 << 20 || n > 16) throw UsageError("--topology " + spec + ": k or n out of range");
  try {
    return lm::kary(k, n, torus, bi);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--topology " + spec + ": " + e.what());
  }
}

// A prediction with its interval: the parameters' 95% half-widths propagated one at a time (finite
// differences, in quadrature: the parameters come from different fits); null with the reason when a
// parameter it needs is missing.
json predicted(const Input& in, const std::function<double(const lm::LogGP&)>& f, double scale = 1) {
  const double v = f(in.loggp());
  if (!std::isfinite(v)) {
    std::string why;
    for (int i = 0; i < 5; ++i)  // the missing ones this prediction depends on
      if (std::isnan(in.v[i])) {
        Input probe = in;
        probe.v[i] = 1;  // any finite value: does the prediction exist then?
        if (std::isfinite(f(probe.loggp()))) why += std::string(why.empty() ? "" : ", ") + kKeys[i] + " missing (" + in.why[i] + ")";
      }
    if (why.empty()) why = std::isinf(v) ? "saturated: no finite value" : "needs parameters this run lacks";
    return {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", why}};
  }
  double sum = 0;
  bool partial = false;
  for (int i = 0; i < 5; ++i) {
    if (std::isnan(in.v[i])) continue;
    if (std::isnan(in.ci[i])) {
      Input probe = in;
      probe.v[i] *= 1.001;
      if (f(probe.loggp()) != v) partial = true;
      continue;
    }
    Input probe = in;
    probe.v[i] += in.ci[i];
    const double d = f(probe.loggp()) - v;
    if (std::isfinite(d)) sum += d * d;
  }
  json j = {{"value_ns", v * scale}, {"ci95_ns", std::sqrt(sum) * scale}};
  if (partial) j["ci_note"] = "omits a parameter given without an interval";
  return j;
}

json value_of(const json& p) { return p.is_object() && p.contains("value_ns") ? p["value_ns"] : json(nullptr); }

std::string us(const json& p, int width = 10) {
  char b[64];
  if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number())
    std::snprintf(b, sizeof b, "%*s", width, "n/a");
  else
    std::snprintf(b, sizeof b, "%*.3f", width, p["value_ns"].get<double>() / 1e3);
  return b;
}

std::string pm(const json& p) {
  if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number()) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.3f ± %.3f", p["value_ns"].get<double>() / 1e3,
                p.contains("ci95_ns") && p["ci95_ns"].is_number() ? p["ci95_ns"].get<double>() / 1e3 : 0.0);
  return b;
}

std::string bench_of(const json& doc) {
  const json& meta = doc.value("meta", json::object());
  std::string b = meta.value("flags", json::object()).value("bench", std::string());
  if (!b.empty()) return b;
  if (doc.contains("all_to_all")) return "all-to-all";
  if (doc.contains("per_k") && doc["per_k"].is_array() && !doc["per_k"].empty())
    return doc["per_k"][0].contains("gain") ? "one-to-k" : "k-to-one";
  return "";
}

json measured_value(const json& p) {  // {value_ns, ci95_ns} -> same, or null
  if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number()) return nullptr;
  return {{"value_ns", p["value_ns"]}, {"ci95_ns", p.value("ci95_ns", json(nullptr))}};
}

}  // namespace

int run_model(int argc, const char* const* argv) {
  std::string result_path, topology, json_out;
  std::vector<std::string> measured_paths;
  int ranks = 0;
  double bytes = 0, flit_bytes = 1, channel = kNaN;
  po::options_description opts("logpbench model RESULT.json --topology crossbar|kary:k=K,n=N[,wrap=mesh|torus][,channels=bi|uni]");
  opts.add_options()
      ("help,h", "this text")
      ("topology", po::value(&topology), "crossbar, or a k-ary n-cube: kary:k=K,n=N (wrap=mesh: no end-around "
                                        "connections, the default; torus: with them; channels=bi (default) or uni)")
      ("ranks", po::value(&ranks), "ranks P (default: from --measured, else k^n; needed with crossbar)")
      ("bytes", po::value(&bytes), "message size B in bytes (default: --measured all-to-all's, else 64, one AM frame)")
      ("flit-bytes", po::value(&flit_bytes)->default_value(1), "bytes per flit; a message is rounded up to whole flits")
      ("channel-ns-per-byte", po::value(&channel), "time one byte holds a network channel (default: the run's G)")
      ("measured", po::value(&measured_paths)->composing(), "a k-to-one, one-to-k or all-to-all result to put beside the prediction (repeatable)")
      ("json", po::value(&json_out), "write the predictions here (atomically)");
  po::options_description hidden;
  hidden.add_options()("result", po::value(&result_path));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("result", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts << "\nPredicts K-to-1, 1-to-K and all-to-all costs with LogP, LoPC and LoGPC (Moritz & Frank)\n"
                           "from the LogGP parameters of RESULT.json, beside the --measured runs.\n";
      return 0;
    }
    if (result_path.empty()) throw UsageError("model: give a RESULT.json with LogGP parameters");
    if (topology.empty()) throw UsageError("model: --topology is required (crossbar or kary:k=K,n=N)");
    if (vm.count("ranks") && ranks < 2) throw UsageError("--ranks must be at least 2");
    if (vm.count("bytes") && !(bytes >= 1 && bytes <= 1e12)) throw UsageError("--bytes must be at least 1");
    if (!(flit_bytes >= 1)) throw UsageError("--flit-bytes must be at least 1");
    if (vm.count("channel-ns-per-byte") && !(channel >= 0 && std::isfinite(channel)))
      throw UsageError("--channel-ns-per-byte must be a time >= 0");

    const json doc = load_json(result_path, "model: RESULT");
    const Input in = read_parameters(doc, result_path);
    lm::Network net = parse_topology(topology);

    json out;
    out["schema"] = "logpbench-model/1";
    out["status"] = "complete";
    out["version"] = version_string();
    const json& meta = doc.value("meta", json::object());
    out["source"] = {{"path", result_path},
                     {"bench", meta.value("flags", json::object()).value("bench", std::string("?"))},
                     {"transport", meta.value("flags", json::object()).value("transport", std::string("?"))},
                     {"emulation", meta.value("emulation", json(nullptr))}};
    json notes = json::array();
    for (int i = 0; i < 5; ++i) {
      if (std::isnan(in.v[i])) {
        out["parameters"][kKeys[i]] = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", in.why[i]}};
        out["missing"].push_back(kKeys[i]);
      } else {
        out["parameters"][kKeys[i]] = {{"value_ns", in.v[i]}, {"ci95_ns", std::isnan(in.ci[i]) ? json(nullptr) : json(in.ci[i])}};
      }
    }
    if (!out.contains("missing")) out["missing"] = json::array();

    // The measured documents: read first, they may give P and B.
    std::vector<std::pair<std::string, json>> measured;
    for (const auto& p : measured_paths) {
      json m = load_json(p, "--measured");
      const std::string b = bench_of(m);
      if (b != "k-to-one" && b != "one-to-k" && b != "all-to-all")
        throw UsageError("--measured " + p + ": not a k-to-one, one-to-k or all-to-all result (meta.flags.bench '" + b + "')");
      if (b == "all-to-all" && !m.contains("all_to_all"))
        throw UsageError("--measured " + p + ": an all-to-all result without 'all_to_all'");
      if (b != "all-to-all" && !(m.contains("per_k") && m["per_k"].is_array()))
        throw UsageError("--measured " + p + ": a " + b + " result without a 'per_k' list");
      measured.emplace_back(p, std::move(m));
    }
    std::string ranks_from = "--ranks", bytes_from = "--bytes";
    for (const auto& [p, m] : measured) {
      if (m.contains("all_to_all")) {
        if (!ranks && m["all_to_all"].value("ranks", 0) >= 2) { ranks = m["all_to_all"]["ranks"]; ranks_from = p; }
        if (!(bytes > 0) && m["all_to_all"].value("bytes", 0.0) >= 1) { bytes = m["all_to_all"]["bytes"]; bytes_from = p; }
      }
    }
    for (const auto& [p, m] : measured) {  // an all-to-all's P first: K-to-1 may not have used every rank
      if (!ranks && m.contains("per_k")) {
        int kmax = 0;
        for (const auto& e : m["per_k"]) kmax = std::max(kmax, e.value("k", 0));
        if (kmax >= 1) { ranks = kmax + 1; ranks_from = p + " (largest K + 1)"; }
      }
    }
    if (!ranks) {
      if (net.topology == "crossbar") throw UsageError("model: --topology crossbar needs --ranks P (or a --measured run)");
      ranks = int(net.nodes);
      ranks_from = "k^n";
    }
    if (net.topology == "crossbar") net = lm::crossbar(ranks);
    if (ranks > net.nodes) throw UsageError("--ranks " + std::to_string(ranks) + ": the network has only " + std::to_string(net.nodes) + " nodes");
    if (ranks < net.nodes)
      notes.push_back("P = " + std::to_string(ranks) + " < " + std::to_string(net.nodes) + " nodes: the model assumes every "
                      "node injects, so it overestimates network contention for this job");
    if (!(bytes > 0)) { bytes = 64; bytes_from = "default: one AM frame"; }
    std::string channel_from = "--channel-ns-per-byte";
    if (std::isnan(channel) && !std::isnan(in.v[4])) { channel = in.v[4]; channel_from = "the run's G"; }
    const bool have_channel = !std::isnan(channel);
    if (!have_channel && net.topology == "kary")
      notes.push_back("no channel time: the run has no G and --channel-ns-per-byte was not given, so C_n and LoGPC "
                      "are missing (with a crossbar they would be 0)");
    if (net.topology == "crossbar" && !have_channel) { channel = 0; channel_from = "unused: a crossbar has no switch contention"; }
    const double flits = std::ceil(bytes / flit_bytes);
    auto occupancy = [&](double b) { return std::ceil(b / flit_bytes) * flit_bytes * channel; };
    const double s = occupancy(bytes);
    out["network"] = {{"topology", net.topology}, {"spec", topology}, {"k", net.k}, {"n", net.n},
                      {"wrap", net.torus ? "torus" : "mesh"}, {"channels", net.bidirectional ? "bi" : "uni"},
                      {"k_d", net.k_d}, {"nodes", net.nodes}, {"ranks", ranks}, {"ranks_from", ranks_from},
                      {"bytes", bytes}, {"bytes_from", bytes_from}, {"flit_bytes", flit_bytes}, {"flits", flits},
                      {"channel_ns_per_byte", have_channel || net.topology == "crossbar" ? json(channel) : json(nullptr)},
                      {"channel_from", channel_from},
                      {"occupancy_ns", have_channel || net.topology == "crossbar" ? json(s) : json(nullptr)}};
    if (net.topology == "crossbar") out["network"]["wrap"] = nullptr, out["network"]["channels"] = nullptr;

    // ---- predictions
    const double sv = have_channel || net.topology == "crossbar" ? s : kNaN;
    auto sync = [&](const lm::LogGP& p) { return lm::sync_all_to_all(p, net, sv); };
    auto async = [&](const lm::LogGP& p) { return lm::async_all_to_all(p, net, sv); };
    json& a2a = out["predictions"]["all_to_all"];
    {
      const auto r = sync(in.loggp());
      a2a["synchronous"] = {
          {"logp", predicted(in, [&](const lm::LogGP& p) { return sync(p).logp; })},
          {"C_r", predicted(in, [&](const lm::LogGP& p) { return sync(p).C_r; })},
          {"lopc", predicted(in, [&](const lm::LogGP& p) { return sync(p).lopc; })},
          {"C_n", predicted(in, [&](const lm::LogGP& p) { return sync(p).C_n; })},
          {"logpc", predicted(in, [&](const lm::LogGP& p) { return sync(p).logpc; })},
          {"injection_per_us", std::isfinite(r.fp.m_c) ? json(r.fp.m_c * 1e3) : json(nullptr)},
          {"rho", std::isfinite(r.fp.rho) ? json(r.fp.rho) : json(nullptr)},
          {"converged", r.fp.converged}, {"iterations", r.fp.iterations},
          {"formula", "LogP 2(o_s+L+o_r); LoPC + C_r, C_r = o_r+o_s (the paper's approximation of LoPC, no MVA); "
                      "LoGPC + 2 C_n, C_n from eq. 7 closed with 2 messages and 2 C_n per iteration"}};
      if (!r.fp.note.empty()) a2a["synchronous"]["note"] = r.fp.note;
    }
    {
      const auto r = async(in.loggp());
      a2a["asynchronous"] = {
          {"logp", predicted(in, [&](const lm::LogGP& p) { return async(p).logp; })},
          {"logpc", predicted(in, [&](const lm::LogGP& p) { return async(p).logpc; })},
          {"C_n", predicted(in, [&](const lm::LogGP& p) { return async(p).C_n; })},
          {"saturated", r.saturated},
          {"rho", std::isfinite(r.open.rho) ? json(r.open.rho) : json(nullptr)},
          {"formula", "LogP max(g, o_s+o_r) per message; LoGPC the same, C_n (open model, m = 1/that) is added latency, "
                      "unless the open rate saturates the network: then the closed fixed point, sends block"}};
      if (r.saturated) a2a["asynchronous"]["note"] = r.open.note;
    }
    {
      auto lng = [&](const lm::LogGP& p) { return lm::long_all_to_all(p, net, bytes, have_channel || net.topology == "crossbar" ? channel : kNaN); };
      const auto r = lng(in.loggp());
      a2a["long_message"] = {
          {"bytes", bytes},
          {"T", predicted(in, [&](const lm::LogGP& p) { return lng(p).T; })},
          {"T_c", predicted(in, [&](const lm::LogGP& p) { return lng(p).T_c; })},
          {"ratio", std::isfinite(r.ratio) ? json(r.ratio) : json(nullptr)},
          {"formula", "T = 2 B G (section 5.1.3); T_c = 1/m_c of eq. 13; T_c/T is eq. 14's bound"}};
    }
    json kto = json::array(), otk = json::array();
    for (int K = 1; K < ranks; ++K) {
      const auto r = lm::k_to_one(in.loggp(), K);
      kto.push_back({{"k", K},
                     {"logp", {{"g", predicted(in, [&](const lm::LogGP& p) { return lm::k_to_one(p, K).g_k; })},
                               {"ratio", std::isfinite(r.ratio) ? json(r.ratio) : json(nullptr)},
                               {"replier_bound", r.replier_bound}}},
                     {"logpc", {{"g", predicted(in, [&](const lm::LogGP& p) { return lm::k_to_one(p, K).g_k; })},
                                {"queueing", predicted(in, [&](const lm::LogGP& p) { return lm::k_to_one(p, K).queueing; })}}}});
      otk.push_back({{"k", K}, {"g", predicted(in, [&](const lm::LogGP& p) { return lm::one_to_k(p, K).g_k; })},
                     {"gain", std::isfinite(lm::one_to_k(in.loggp(), K).gain) ? json(1.0) : json(nullptr)}});
    }
    out["predictions"]["k_to_one"] = kto;
    out["predictions"]["k_to_one_formula"] =
        "LogP: g(K) = max(g1, K max(g, o_r+o_s)), g1 = max(g, o_s+o_r): ratio K once the replier binds (Culler 3.5). "
        "LoGPC adds no gap (an endpoint hot spot, not uniform network traffic); it adds queueing latency (K-1) max(g, o_r+o_s)";
    out["predictions"]["one_to_k"] = otk;
    // Curves over message size for the figure (the paper's Figs. 6 and 9 draw against size).
    json curve = json::array();
    for (double b = 8; b <= 65536; b *= 2) {
      const double sb = have_channel || net.topology == "crossbar" ? occupancy(b) : kNaN;
      const auto sy = lm::sync_all_to_all(in.loggp(), net, sb);
      const auto as = lm::async_all_to_all(in.loggp(), net, sb);
      const auto lg = lm::long_all_to_all(in.loggp(), net, b, have_channel || net.topology == "crossbar" ? channel : kNaN);
      auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
      curve.push_back({{"bytes", b}, {"sync_logp_ns", num(sy.logp)}, {"sync_lopc_ns", num(sy.lopc)},
                       {"sync_logpc_ns", num(sy.logpc)}, {"async_logp_ns", num(as.logp)}, {"async_logpc_ns", num(as.logpc)},
                       {"long_T_ns", num(lg.T)}, {"long_T_c_ns", num(lg.T_c)}});
    }
    out["curves"]["all_to_all_by_bytes"] = curve;

    // ---- measurement beside prediction
    json cmp = json::object();
    for (const auto& [p, m] : measured) {
      const std::string b = bench_of(m);
      json src = {{"path", p}, {"emulation", m.value("meta", json::object()).value("emulation", json(nullptr))}};
      if (m.contains("label")) src["label"] = m["label"];  // e.g. a document a test made by hand
      if (b == "k-to-one" || b == "one-to-k") {
        json rows = json::array();
        for (const auto& e : m["per_k"]) {
          const int K = e.value("k", 0);
          if (K < 1) throw UsageError("--measured " + p + ": a per_k entry without k >= 1");
          json row = {{"k", K}, {"measured_g", measured_value(e.value("g", json(nullptr)))}};
          if (b == "k-to-one") {
            row["measured_ratio"] = e.value("ratio", json(nullptr));
            row["predicted_g"] = predicted(in, [&](const lm::LogGP& q) { return lm::k_to_one(q, K).g_k; });
            row["predicted_ratio"] = value_of(row["predicted_g"]).is_null() ? json(nullptr) : json(lm::k_to_one(in.loggp(), K).ratio);
            row["expected_ratio_logp"] = K;
            if (e.contains("senders")) row["senders"] = e["senders"];
          } else {
            row["measured_gain"] = e.value("gain", json(nullptr));
            row["predicted_g"] = predicted(in, [&](const lm::LogGP& q) { return lm::one_to_k(q, K).g_k; });
            row["predicted_gain"] = 1.0;
          }
          rows.push_back(row);
        }
        src["per_k"] = rows;
        cmp[b == "k-to-one" ? "k_to_one" : "one_to_k"] = src;
      } else {
        const json& aa = m["all_to_all"];
        src["ranks"] = aa.value("ranks", json(nullptr));
        src["bytes"] = aa.value("bytes", json(nullptr));
        for (const char* mode : {"synchronous", "asynchronous"}) {
          const json it = aa.value(mode, json::object()).value("per_iteration", json(nullptr));
          src[mode] = {{"measured", measured_value(it)}, {"logp", a2a[mode]["logp"]}, {"logpc", a2a[mode]["logpc"]}};
          if (std::string(mode) == "synchronous") src[mode]["lopc"] = a2a[mode]["lopc"];
        }
        if (src["ranks"].is_number() && src["ranks"].get<int>() != ranks)
          notes.push_back(p + " ran " + std::to_string(src["ranks"].get<int>()) + " ranks, the model " + std::to_string(ranks));
        if (src["bytes"].is_number() && src["bytes"].get<double>() != bytes)
          notes.push_back(p + " sent " + src["bytes"].dump() + "-byte messages, the model assumed " + std::to_string(bytes));
        cmp["all_to_all"] = src;
      }
    }
    out["comparison"] = cmp;
    out["notes"] = notes;

    // ---- the table
    std::printf("LoGPC model (Moritz & Frank) of %s: %s over %s%s\n", result_path.c_str(), out["source"]["bench"].get<std::string>().c_str(),
                out["source"]["transport"].get<std::string>().c_str(),
                out["source"]["emulation"].is_object() ? (" emulating " + out["source"]["emulation"].value("spec", std::string())).c_str() : "");
    std::printf("  parameters (us):");
    for (int i = 0; i < 5; ++i) std::printf("  %s %s", kKeys[i], i == 4 && !std::isnan(in.v[i]) ? (std::to_string(in.v[i]) + " ns/B").c_str() : pm(out["parameters"][kKeys[i]]).c_str());
    std::printf("\n");
    for (int i = 0; i < 5; ++i)
      if (std::isnan(in.v[i])) std::printf("  %s missing: %s\n", kKeys[i], in.why[i].c_str());
    if (net.topology == "crossbar")
      std::printf("  network: full crossbar of %d ranks (no switch contention: k_d = 1)\n", ranks);
    else
      std::printf("  network: %d-ary %d-cube %s, %s channels, k_d %.4g per dimension, %ld nodes, %d ranks; B %.0f bytes = %.0f flits, channel %s\n",
                  net.k, net.n, net.torus ? "torus" : "mesh", net.bidirectional ? "bidirectional" : "unidirectional", net.k_d,
                  net.nodes, ranks, bytes, flits, have_channel ? (std::to_string(channel) + " ns/byte (" + channel_from + ")").c_str() : "unknown");
    std::printf("  all-to-all per iteration (us)   %10s %10s %10s %10s  %s\n", "LogP", "LoPC", "LoGPC", "C_n", "measured");
    for (const char* mode : {"synchronous", "asynchronous"}) {
      const json& r = a2a[mode];
      std::string meas = "-";
      if (cmp.contains("all_to_all") && cmp["all_to_all"][mode]["measured"].is_object()) meas = pm(cmp["all_to_all"][mode]["measured"]);
      std::printf("    %-28s %s %s %s %s  %s%s\n", mode, us(r["logp"]).c_str(), r.contains("lopc") ? us(r["lopc"]).c_str() : us(r["logp"]).c_str(),
                  us(r["logpc"]).c_str(), us(r["C_n"]).c_str(), meas.c_str(), r.value("saturated", false) ? "  (saturated: sends block)" : "");
    }
    const json& lg = a2a["long_message"];
    std::printf("    long messages, B = %-9.0f T = 2BG %s  T_c %s  T_c/T %s\n", bytes, us(lg["T"]).c_str(), us(lg["T_c"]).c_str(),
                lg["ratio"].is_number() ? std::to_string(lg["ratio"].get<double>()).c_str() : "n/a");
    std::printf("  k-to-one, per-sender gap (us)    K   LogP=LoGPC  ratio  queueing  measured g        ratio\n");
    for (const auto& r : kto) {
      std::string mg = "-", mr = "-";
      if (cmp.contains("k_to_one"))
        for (const auto& e : cmp["k_to_one"]["per_k"])
          if (e["k"] == r["k"]) {
            mg = pm(e["measured_g"]);
            if (e["measured_ratio"].is_object() && e["measured_ratio"]["value"].is_number()) {
              char b[64];
              std::snprintf(b, sizeof b, "%.2f ± %.2f", e["measured_ratio"]["value"].get<double>(),
                            e["measured_ratio"].value("ci95", json(0.0)).is_number() ? e["measured_ratio"]["ci95"].get<double>() : 0.0);
              mr = b;
            }
          }
      std::printf("  %33d %s %6s %s  %-16s %s\n", r["k"].get<int>(), us(r["logp"]["g"], 12).c_str(),
                  r["logp"]["ratio"].is_number() ? std::to_string(r["logp"]["ratio"].get<double>()).substr(0, 5).c_str() : "n/a",
                  us(r["logpc"]["queueing"], 9).c_str(), mg.c_str(), mr.c_str());
    }
    if (cmp.contains("one_to_k")) {
      std::printf("  one-to-k (LogP: gain 1)          K   measured g        gain\n");
      for (const auto& e : cmp["one_to_k"]["per_k"])
        std::printf("  %33d   %-16s %s\n", e["k"].get<int>(), pm(e["measured_g"]).c_str(),
                    e["measured_gain"].is_object() ? e["measured_gain"].value("value", json(nullptr)).dump().c_str() : "-");
    }
    for (const auto& n : notes) std::printf("  note: %s\n", n.get<std::string>().c_str());
    if (!json_out.empty()) {
      write_json_atomic(json_out, out);
      std::printf("model: %s\n", json_out.c_str());
    }
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "logpbench model: %s\n", e.what());
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "logpbench model: %s (see logpbench model --help)\n", e.what());
    return 2;
  } catch (const json::exception& e) {
    std::fprintf(stderr, "logpbench model: malformed input: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "logpbench model: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace logpb::app
