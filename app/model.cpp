#include "app/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "analysis/logpc.hpp"
#include "common/errors.hpp"
#include "common/results.hpp"
#include "methods/descriptor.hpp"

namespace po = boost::program_options;
using nlohmann::json;
namespace lm = logpb::analysis::logpc;

namespace logpb::app {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const auto& kKeys = lm::kParameterKeys;
using Input = lm::RunParameters;

struct ModelArgs {
  std::string result_path, topology, json_out;
  std::vector<std::string> measured_paths;
  int ranks = 0;
  double bytes = 0, flit_bytes = 1, channel = kNaN;
};
using Measured = std::vector<std::pair<std::string, json>>;  // (path, document)

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
    std::string k = kKeys[i];
    // A signature publishes no o_r: its o_s_plus_o_r (g' - Delta) is the pair it defines, and o_r_remainder
    // that pair less its o_s. LoGPC uses o_r only in o_s + o_r (logpc.hpp), which the remainder gives back.
    if (k == "o_r" && !ps.contains(k) && ps.contains("o_r_remainder")) k = "o_r_remainder";
    if (!ps.contains(k)) {
      in.why[i] = "not in " + path;
      continue;
    }
    const json& p = ps[k];
    if (!p.is_object() || !p.contains("value_ns") || !p["value_ns"].is_number()) {
      in.why[i] =
          "no value in " + path +
          (p.is_object() && p.contains("error") && p["error"].is_string() ? " (" + p["error"].get<std::string>() + ")"
                                                                          : std::string());
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
    throw UsageError("--topology must be crossbar or kary:k=K,n=N[,wrap=mesh|torus][,channels=bi|uni], not '" + spec +
                     "'");
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
      try {
        x = std::stoi(val, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != val.size() || val.empty())
        throw UsageError("--topology " + spec + ": " + key + "='" + val + "' is not an integer");
      return x;
    };
    if (key == "k")
      k = integer();
    else if (key == "n")
      n = integer();
    else if (key == "wrap" && (val == "mesh" || val == "torus"))
      torus = val == "torus";
    else if (key == "channels" && (val == "bi" || val == "uni"))
      bi = val == "bi";
    else
      throw UsageError("--topology " + spec + ": unknown or bad item '" + item +
                       "' (k=, n=, wrap=mesh|torus, channels=bi|uni)");
  }
  if (k < 2 || n < 1) throw UsageError("--topology " + spec + ": needs k >= 2 and n >= 1");
  if (k > 1 << 20 || n > 16) throw UsageError("--topology " + spec + ": k or n out of range");
  try {
    return lm::kary(k, n, torus, bi);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--topology " + spec + ": " + e.what());
  }
}

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

po::options_description model_options(ModelArgs& a) {
  po::options_description opts(
      "logpbench model RESULT.json --topology crossbar|kary:k=K,n=N[,wrap=mesh|torus][,channels=bi|uni]");
  opts.add_options()("help,h", "this text")(
      "topology", po::value(&a.topology),
      "crossbar, or a k-ary n-cube: kary:k=K,n=N (wrap=mesh: no end-around "
      "connections, the default; torus: with them; channels=bi (default) or uni)")(
      "ranks", po::value(&a.ranks), "ranks P (default: from --measured, else k^n; needed with crossbar)")(
      "bytes", po::value(&a.bytes),
      "message size B in bytes (default: --measured all-to-all's, else 64, one AM frame)")(
      "flit-bytes", po::value(&a.flit_bytes)->default_value(1),
      "bytes per flit; a message is rounded up to whole flits")(
      "channel-ns-per-byte", po::value(&a.channel), "time one byte holds a network channel (default: the run's G)")(
      "measured", po::value(&a.measured_paths)->composing(),
      "a k-to-one, one-to-k or all-to-all result to put beside the prediction (repeatable)")(
      "json", po::value(&a.json_out), "write the predictions here (atomically)");
  return opts;
}

// False when --help was asked for (and printed).
bool parse_model_args(int argc, const char* const* argv, const po::options_description& opts, ModelArgs& a) {
  po::options_description hidden;
  hidden.add_options()("result", po::value(&a.result_path));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("result", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc - 1, argv + 1).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts
              << "\nPredicts K-to-1, 1-to-K and all-to-all costs with LogP, LoPC and LoGPC (Moritz & Frank)\n"
                 "from the LogGP parameters of RESULT.json, beside the --measured runs.\n";
    return false;
  }
  if (a.result_path.empty()) throw UsageError("model: give a RESULT.json with LogGP parameters");
  if (a.topology.empty()) throw UsageError("model: --topology is required (crossbar or kary:k=K,n=N)");
  if (vm.count("ranks") && a.ranks < 2) throw UsageError("--ranks must be at least 2");
  if (vm.count("bytes") && !(a.bytes >= 1 && a.bytes <= 1e12)) throw UsageError("--bytes must be at least 1");
  if (!(a.flit_bytes >= 1)) throw UsageError("--flit-bytes must be at least 1");
  if (vm.count("channel-ns-per-byte") && !(a.channel >= 0 && std::isfinite(a.channel)))
    throw UsageError("--channel-ns-per-byte must be a time >= 0");
  return true;
}

// The document's head: where the parameters come from, and each of them (or why it is missing).
json model_head(const json& doc, const std::string& result_path, const Input& in) {
  json out;
  out["schema"] = "logpbench-model/1";
  out["status"] = "complete";
  out["version"] = version_string();
  const json& meta = doc.value("meta", json::object());
  out["source"] = {{"path", result_path},
                   {"bench", meta.value("flags", json::object()).value("bench", std::string("?"))},
                   {"transport", meta.value("flags", json::object()).value("transport", std::string("?"))},
                   {"emulation", meta.value("emulation", json(nullptr))}};
  for (int i = 0; i < 5; ++i) {
    if (std::isnan(in.v[i])) {
      out["parameters"][kKeys[i]] = {{"value_ns", nullptr}, {"ci95_ns", nullptr}, {"error", in.why[i]}};
      out["missing"].push_back(kKeys[i]);
    } else {
      out["parameters"][kKeys[i]] = {{"value_ns", in.v[i]},
                                     {"ci95_ns", std::isnan(in.ci[i]) ? json(nullptr) : json(in.ci[i])}};
    }
  }
  if (!out.contains("missing")) out["missing"] = json::array();
  return out;
}

// The measured documents: read first, they may give P and B.
Measured load_measured(const std::vector<std::string>& paths) {
  Measured measured;
  for (const auto& p : paths) {
    json m = load_json(p, "--measured");
    const std::string b = bench_of(m);
    const methods::ContentionShape shape = methods::contention_shape(b);
    if (shape == methods::ContentionShape::none)
      throw UsageError("--measured " + p + ": not a k-to-one, one-to-k or all-to-all result (meta.flags.bench '" + b +
                       "')");
    if (shape == methods::ContentionShape::all_to_all && !m.contains("all_to_all"))
      throw UsageError("--measured " + p + ": an all-to-all result without 'all_to_all'");
    if (shape != methods::ContentionShape::all_to_all && !(m.contains("per_k") && m["per_k"].is_array()))
      throw UsageError("--measured " + p + ": a " + b + " result without a 'per_k' list");
    measured.emplace_back(p, std::move(m));
  }
  return measured;
}

// P, B and the channel time, from the options, the measured runs, the network and the run's G, each with
// where it came from (out["network"]); what the model then cannot see goes to `notes`.
lm::Setting resolve_setting(const ModelArgs& a, lm::Network net, const Input& in, const Measured& measured, json& out,
                            json& notes) {
  int ranks = a.ranks;
  double bytes = a.bytes, channel = a.channel;
  const double flit_bytes = a.flit_bytes;
  std::string ranks_from = "--ranks", bytes_from = "--bytes";
  for (const auto& [p, m] : measured) {
    if (m.contains("all_to_all")) {
      if (!ranks && m["all_to_all"].value("ranks", 0) >= 2) {
        ranks = m["all_to_all"]["ranks"];
        ranks_from = p;
      }
      if (!(bytes > 0) && m["all_to_all"].value("bytes", 0.0) >= 1) {
        bytes = m["all_to_all"]["bytes"];
        bytes_from = p;
      }
    }
  }
  for (const auto& [p, m] : measured) {  // an all-to-all's P first: K-to-1 may not have used every rank
    if (!ranks && m.contains("per_k")) {
      int kmax = 0;
      for (const auto& e : m["per_k"]) kmax = std::max(kmax, e.value("k", 0));
      if (kmax >= 1) {
        ranks = kmax + 1;
        ranks_from = p + " (largest K + 1)";
      }
    }
  }
  if (!ranks) {
    if (net.topology == "crossbar")
      throw UsageError("model: --topology crossbar needs --ranks P (or a --measured run)");
    ranks = int(net.nodes);
    ranks_from = "k^n";
  }
  if (net.topology == "crossbar") net = lm::crossbar(ranks);
  if (ranks > net.nodes)
    throw UsageError("--ranks " + std::to_string(ranks) + ": the network has only " + std::to_string(net.nodes) +
                     " nodes");
  if (ranks < net.nodes)
    notes.push_back("P = " + std::to_string(ranks) + " < " + std::to_string(net.nodes) +
                    " nodes: the model assumes every "
                    "node injects, so it overestimates network contention for this job");
  if (!(bytes > 0)) {
    bytes = 64;
    bytes_from = "default: one AM frame";
  }
  std::string channel_from = "--channel-ns-per-byte";
  if (std::isnan(channel) && !std::isnan(in.v[4])) {
    channel = in.v[4];
    channel_from = "the run's G";
  }
  const bool have_channel = !std::isnan(channel);
  if (!have_channel && net.topology == "kary")
    notes.push_back(
        "no channel time: the run has no G and --channel-ns-per-byte was not given, so C_n and LoGPC "
        "are missing (with a crossbar they would be 0)");
  if (net.topology == "crossbar" && !have_channel) {
    channel = 0;
    channel_from = "unused: a crossbar has no switch contention";
  }
  const double flits = std::ceil(bytes / flit_bytes);
  lm::Setting st{net, ranks, bytes, flit_bytes, channel, have_channel};
  const double s = st.occupancy(bytes);
  out["network"] = {{"topology", net.topology},
                    {"spec", a.topology},
                    {"k", net.k},
                    {"n", net.n},
                    {"wrap", net.torus ? "torus" : "mesh"},
                    {"channels", net.bidirectional ? "bi" : "uni"},
                    {"k_d", net.k_d},
                    {"nodes", net.nodes},
                    {"ranks", ranks},
                    {"ranks_from", ranks_from},
                    {"bytes", bytes},
                    {"bytes_from", bytes_from},
                    {"flit_bytes", flit_bytes},
                    {"flits", flits},
                    {"channel_ns_per_byte", have_channel || net.topology == "crossbar" ? json(channel) : json(nullptr)},
                    {"channel_from", channel_from},
                    {"occupancy_ns", have_channel || net.topology == "crossbar" ? json(s) : json(nullptr)}};
  if (net.topology == "crossbar") out["network"]["wrap"] = nullptr, out["network"]["channels"] = nullptr;
  return st;
}

// The largest K to predict: every K the job could hold, and every K a measured run reached (a k-to-one of 8
// ranks beside an all-to-all of 4).
int largest_k(const lm::Setting& st, const Measured& measured) {
  int kmax = st.ranks - 1;
  for (const auto& pm_ : measured)
    if (pm_.second.contains("per_k"))
      for (const auto& e : pm_.second["per_k"]) kmax = std::max(kmax, e.value("k", 0));
  return kmax;
}

json predictions(const Input& in, const lm::Setting& st, int kmax) {
  json pr;
  pr["all_to_all"] = lm::all_to_all_predictions(in, st);
  pr["k_to_one"] = lm::k_to_one_predictions(in, kmax);
  pr["k_to_one_formula"] = lm::kKToOneFormula;
  pr["one_to_k"] = lm::one_to_k_predictions(in, kmax);
  return pr;
}

// Measurement beside prediction: each measured run with the model's figures for what it measured.
json comparison(const Input& in, const lm::Setting& st, const Measured& measured, const json& a2a, json& notes) {
  json cmp = json::object();
  for (const auto& [p, m] : measured) {
    const methods::ContentionShape shape = methods::contention_shape(bench_of(m));
    json src = {{"path", p}, {"emulation", m.value("meta", json::object()).value("emulation", json(nullptr))}};
    if (m.contains("label")) src["label"] = m["label"];  // e.g. a document a test made by hand
    if (shape != methods::ContentionShape::all_to_all) {
      json rows = json::array();
      for (const auto& e : m["per_k"]) {
        const int K = e.value("k", 0);
        if (K < 1) throw UsageError("--measured " + p + ": a per_k entry without k >= 1");
        json row = {{"k", K}, {"measured_g", measured_value(e.value("g", json(nullptr)))}};
        if (shape == methods::ContentionShape::k_to_one) {
          row["measured_ratio"] = e.value("ratio", json(nullptr));
          lm::predict_k_to_one_row(in, K, row);
          if (e.contains("senders")) row["senders"] = e["senders"];
        } else {
          row["measured_gain"] = e.value("gain", json(nullptr));
          lm::predict_one_to_k_row(in, K, row);
        }
        rows.push_back(row);
      }
      src["per_k"] = rows;
      cmp[methods::to_key(shape)] = src;
    } else {
      const json& aa = m["all_to_all"];
      src["ranks"] = aa.value("ranks", json(nullptr));
      src["bytes"] = aa.value("bytes", json(nullptr));
      for (const char* mode : {"synchronous", "asynchronous"}) {
        const json it = aa.value(mode, json::object()).value("per_iteration", json(nullptr));
        src[mode] = {{"measured", measured_value(it)}, {"logp", a2a[mode]["logp"]}, {"logpc", a2a[mode]["logpc"]}};
        if (std::string(mode) == "synchronous") src[mode]["lopc"] = a2a[mode]["lopc"];
      }
      if (src["ranks"].is_number() && src["ranks"].get<int>() != st.ranks)
        notes.push_back(p + " ran " + std::to_string(src["ranks"].get<int>()) + " ranks, the model " +
                        std::to_string(st.ranks));
      if (src["bytes"].is_number() && src["bytes"].get<double>() != st.bytes)
        notes.push_back(p + " sent " + src["bytes"].dump() + "-byte messages, the model assumed " +
                        std::to_string(st.bytes));
      cmp["all_to_all"] = src;
    }
  }
  return cmp;
}

// The table: the parameters, the network, and each prediction beside what was measured.
void print_model(const json& out, const Input& in, const lm::Setting& st, const std::string& result_path) {
  const lm::Network& net = st.net;
  const int ranks = st.ranks;
  const double bytes = st.bytes, channel = st.channel, flits = out["network"]["flits"].get<double>();
  const bool have_channel = st.have_channel;
  const std::string channel_from = out["network"]["channel_from"].get<std::string>();
  const json& a2a = out["predictions"]["all_to_all"];
  const json& kto = out["predictions"]["k_to_one"];
  const json& cmp = out["comparison"];
  const json& notes = out["notes"];
  std::printf("LoGPC model (Moritz & Frank) of %s: %s over %s%s\n", result_path.c_str(),
              out["source"]["bench"].get<std::string>().c_str(), out["source"]["transport"].get<std::string>().c_str(),
              out["source"]["emulation"].is_object()
                  ? (" emulating " + out["source"]["emulation"].value("spec", std::string())).c_str()
                  : "");
  std::printf("  parameters (us):");
  for (int i = 0; i < 5; ++i)
    std::printf("  %s %s", kKeys[i],
                i == 4 && !std::isnan(in.v[i]) ? (std::to_string(in.v[i]) + " ns/B").c_str()
                                               : pm(out["parameters"][kKeys[i]]).c_str());
  std::printf("\n");
  for (int i = 0; i < 5; ++i)
    if (std::isnan(in.v[i])) std::printf("  %s missing: %s\n", kKeys[i], in.why[i].c_str());
  if (net.topology == "crossbar")
    std::printf("  network: full crossbar of %d ranks (no switch contention: k_d = 1)\n", ranks);
  else
    std::printf(
        "  network: %d-ary %d-cube %s, %s channels, k_d %.4g per dimension, %ld nodes, %d ranks; B %.0f bytes = %.0f "
        "flits, channel %s\n",
        net.k, net.n, net.torus ? "torus" : "mesh", net.bidirectional ? "bidirectional" : "unidirectional", net.k_d,
        net.nodes, ranks, bytes, flits,
        have_channel ? (std::to_string(channel) + " ns/byte (" + channel_from + ")").c_str() : "unknown");
  std::printf("  all-to-all per iteration (us)   %10s %10s %10s %10s  %s\n", "LogP", "LoPC", "LoGPC", "C_n",
              "measured");
  for (const char* mode : {"synchronous", "asynchronous"}) {
    const json& r = a2a[mode];
    std::string meas = "-";
    if (cmp.contains("all_to_all") && cmp["all_to_all"][mode]["measured"].is_object())
      meas = pm(cmp["all_to_all"][mode]["measured"]);
    std::printf("    %-28s %s %s %s %s  %s%s\n", mode, us(r["logp"]).c_str(),
                r.contains("lopc") ? us(r["lopc"]).c_str() : us(r["logp"]).c_str(), us(r["logpc"]).c_str(),
                us(r["C_n"]).c_str(), meas.c_str(), r.value("saturated", false) ? "  (saturated: sends block)" : "");
  }
  const json& lg = a2a["long_message"];
  std::printf("    long messages, B = %-9.0f T = 2BG %s  T_c %s  T_c/T %s\n", bytes, us(lg["T"]).c_str(),
              us(lg["T_c"]).c_str(),
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
                          e["measured_ratio"].value("ci95", json(0.0)).is_number()
                              ? e["measured_ratio"]["ci95"].get<double>()
                              : 0.0);
            mr = b;
          }
        }
    std::printf(
        "  %33d %s %6s %s  %-16s %s\n", r["k"].get<int>(), us(r["logp"]["g"], 12).c_str(),
        r["logp"]["ratio"].is_number() ? std::to_string(r["logp"]["ratio"].get<double>()).substr(0, 5).c_str() : "n/a",
        us(r["logpc"]["queueing"], 9).c_str(), mg.c_str(), mr.c_str());
  }
  if (cmp.contains("one_to_k")) {
    std::printf("  one-to-k (LogP: gain 1)          K   measured g        gain\n");
    for (const auto& e : cmp["one_to_k"]["per_k"]) {
      std::string gain = "-";
      if (e["measured_gain"].is_object() && e["measured_gain"]["value"].is_number()) {
        char b[64];
        std::snprintf(b, sizeof b, "%.2f ± %.2f", e["measured_gain"]["value"].get<double>(),
                      e["measured_gain"]["ci95"].is_number() ? e["measured_gain"]["ci95"].get<double>() : 0.0);
        gain = b;
      }
      std::printf("  %33d   %-16s %s\n", e["k"].get<int>(), pm(e["measured_g"]).c_str(), gain.c_str());
    }
  }
  for (const auto& n : notes) std::printf("  note: %s\n", n.get<std::string>().c_str());
}

}  // namespace

int run_model(int argc, const char* const* argv) {
  ModelArgs a;
  const po::options_description opts = model_options(a);
  try {
    if (!parse_model_args(argc, argv, opts, a)) return 0;
    const json doc = load_json(a.result_path, "model: RESULT");
    const Input in = read_parameters(doc, a.result_path);
    const lm::Network net = parse_topology(a.topology);
    json out = model_head(doc, a.result_path, in);
    json notes = json::array();
    const Measured measured = load_measured(a.measured_paths);
    const lm::Setting st = resolve_setting(a, net, in, measured, out, notes);
    out["predictions"] = predictions(in, st, largest_k(st, measured));
    out["curves"]["all_to_all_by_bytes"] = lm::all_to_all_by_bytes(in, st);
    out["comparison"] = comparison(in, st, measured, out["predictions"]["all_to_all"], notes);
    out["notes"] = notes;
    print_model(out, in, st, a.result_path);
    if (!a.json_out.empty()) {
      write_json_atomic(a.json_out, out);
      std::printf("model: %s\n", a.json_out.c_str());
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
