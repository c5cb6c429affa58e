// Chakra-style JSON for traces (docs/formats.md). Node types and collective names follow Chakra's
// execution-trace vocabulary (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE; ALL_REDUCE...).
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;
using collectives::Op;

const std::map<NodeType, std::string> kNodeTypes = {{NodeType::comp, "COMP_NODE"}, {NodeType::coll, "COMM_COLL_NODE"},
                                                     {NodeType::send, "COMM_SEND_NODE"}, {NodeType::recv, "COMM_RECV_NODE"}};
const std::map<Op, std::string> kCommTypes = {{Op::all_reduce, "ALL_REDUCE"}, {Op::all_gather, "ALL_GATHER"},
                                              {Op::reduce_scatter, "REDUCE_SCATTER"}, {Op::alltoall, "ALL_TO_ALL"},
                                              {Op::broadcast, "BROADCAST"}, {Op::reduce, "REDUCE"}};
const std::map<Category, std::string> kCategories = {{Category::compute, "compute"}, {Category::tp_comm, "tp_comm"},
                                                     {Category::cp_comm, "cp_comm"}, {Category::ep_comm, "ep_comm"},
                                                     {Category::dp_comm, "dp_comm"}, {Category::pp_comm, "pp_comm"},
                                                     {Category::optimizer, "optimizer"}};
const std::map<Kernel, std::string> kKernels = {{Kernel::gemm, "gemm"}, {Kernel::attention_fwd, "attention_fwd"},
                                                {Kernel::attention_bwd, "attention_bwd"}, {Kernel::memory, "memory"},
                                                {Kernel::optimizer, "optimizer"}};

constexpr long long kMaxInt = std::numeric_limits<int>::max();
constexpr long long kMinInt = std::numeric_limits<int>::min();
constexpr long long kMaxWorld = 1 << 24;      ///< ranks: far beyond any cluster the catalog describes
constexpr long long kMaxRepeat = 1 << 20;
constexpr long long kMaxSms = 1 << 16;
constexpr double kMaxFlops = 1e24;            ///< per node or per step: days of a 100k-GPU cluster
constexpr double kMaxTokens = 1e15;
constexpr double kMaxBytes = 1e18;            ///< 1 EB per op
constexpr double kMaxGemmDim = 1e9;
constexpr double kMaxDuration_s = 1e6;        ///< 11.6 days per op

/// Typed, range-checked access to trace fields: every failure names the file, the JSON pointer, the
/// value and what was expected (never a cast of an out-of-range number).
struct FieldReader {
  const std::string& file;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const { throw InputError(file + ": " + where + ": " + what); }

  const json& at(const json& object, const char* key, const std::string& where) const {
    if (!object.contains(key)) fail(where + "/" + key, "missing");
    return object[key];
  }
  const json& object(const json& value, const std::string& where) const {
    if (!value.is_object()) fail(where, config::render_value(value) + ": expected an object");
    return value;
  }
  const json& array(const json& value, const std::string& where) const {
    if (!value.is_array()) fail(where, config::render_value(value) + ": expected an array");
    return value;
  }
  std::string string(const json& value, const std::string& where) const {
    if (!value.is_string()) fail(where, config::render_value(value) + ": expected a string");
    return value.get<std::string>();
  }
  bool boolean(const json& value, const std::string& where) const {
    if (!value.is_boolean()) fail(where, config::render_value(value) + ": expected true or false");
    return value.get<bool>();
  }
  int integer(const json& value, const std::string& where, long long lo, long long hi, const std::string& what = "") const {
    const std::string expected = what.empty() ? "an integer from " + std::to_string(lo) + " to " + std::to_string(hi)
                                              : what + " (" + std::to_string(lo) + " to " + std::to_string(hi) + ")";
    if (!value.is_number_integer()) fail(where, config::render_value(value) + ": expected " + expected);
    const bool above = value.is_number_unsigned() && value.get<unsigned long long>() > static_cast<unsigned long long>(hi);
    if (above || value.get<long long>() < lo || value.get<long long>() > hi) fail(where, config::render_value(value) + ": expected " + expected);
    return static_cast<int>(value.get<long long>());
  }
  std::vector<int> integers(const json& value, const std::string& where, long long lo, long long hi, const std::string& what,
                            bool allow_duplicates = false) const {
    array(value, where);
    std::vector<int> out;
    std::set<int> seen;
    for (std::size_t i = 0; i < value.size(); ++i) {
      out.push_back(integer(value[i], where + "/" + std::to_string(i), lo, hi, what));
      if (!seen.insert(out.back()).second && !allow_duplicates) fail(where, std::to_string(out.back()) + " is listed twice");
    }
    return out;
  }
  /// A finite, non-negative number up to `hi`.
  double number(const json& value, const std::string& where, double hi) const {
    if (!value.is_number()) fail(where, config::render_value(value) + ": expected a number");
    const double x = value.get<double>();
    if (!std::isfinite(x) || x < 0 || x > hi) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", hi);
      fail(where, config::render_value(value) + ": expected a finite number from 0 to " + text);
    }
    return x;
  }
};

template <typename E>
E parse_name(const std::map<E, std::string>& names, const json& value, const std::string& where) {
  if (value.is_string()) {
    for (const auto& [e, name] : names) {
      if (name == value.get<std::string>()) return e;
    }
  }
  std::string known;
  for (const auto& [e, name] : names) known += (known.empty() ? "" : ", ") + name;
  throw InputError(where + " = " + value.dump() + ": expected one of " + known);
}

}  // namespace

std::string to_string(NodeType type) { return kNodeTypes.at(type); }
std::string to_string(Category category) { return kCategories.at(category); }
std::string to_string(Kernel kernel) { return kKernels.at(kernel); }
std::vector<Category> all_categories() {
  return {Category::compute, Category::tp_comm, Category::cp_comm, Category::ep_comm,
          Category::dp_comm, Category::pp_comm, Category::optimizer};
}

json trace_to_json(const Trace& trace) {
  json nodes = json::array();
  for (const auto& n : trace.nodes) {
    json j = {{"id", n.id}, {"rank", n.rank}, {"type", kNodeTypes.at(n.type)}, {"name", n.name},
              {"category", kCategories.at(n.category)}, {"data_deps", n.deps}};
    if (!n.stream.empty()) j["stream"] = n.stream;
    if (n.type == NodeType::comp) {
      j["kernel"] = kKernels.at(n.kernel);
      if (n.flops > 0) j["num_ops"] = n.flops;
      if (n.bytes > 0) j["tensor_size"] = n.bytes;
      if (n.kernel == Kernel::gemm) j["gemm_mnk"] = {n.m, n.n, n.k};
      if (n.repeat != 1) j["repeat"] = n.repeat;
      if (n.fp8) j["fp8"] = true;
      if (n.fp4) j["fp4"] = true;
      if (n.fp8_split_accumulator) j["fp8_split_accumulator"] = true;
      if (n.fp8_block_scaled) j["fp8_block_scaled"] = true;
      if (n.sms_taken > 0) j["sms_taken"] = n.sms_taken;
      if (n.attention_span > 0) j["attention_span"] = n.attention_span;
      if (n.attention_steps > 1) j["attention_steps"] = n.attention_steps;
      if (n.attention_flash2) j["attention_kernel"] = "flash2";
      if (n.attention_head_dim > 0) j["attention_head_dim"] = n.attention_head_dim;
    } else if (n.type == NodeType::coll) {
      j["comm_type"] = kCommTypes.at(n.op);
      j["comm_group"] = n.comm;
      j["comm_size"] = n.comm_bytes;
      if (n.comm_bandwidth_share != 1.0) j["comm_bandwidth_share"] = n.comm_bandwidth_share;
    } else {
      j[n.type == NodeType::send ? "comm_dst" : "comm_src"] = n.peer;
      j["comm_tag"] = n.tag;
      j["comm_size"] = n.comm_bytes;
    }
    if (n.duration_s >= 0) j["duration_s"] = n.duration_s;
    nodes.push_back(std::move(j));
  }
  json comms = json::array();
  for (const auto& c : trace.comms) comms.push_back({{"id", c.id}, {"kind", c.kind}, {"ranks", c.ranks}});
  return {{"schema", "fmsim.trace/1"},
          {"world_size", trace.world},
          {"symmetric", trace.symmetric},
          {"ranks", trace.ranks},
          {"rank_gpu", trace.rank_gpu},
          {"model_flops_per_step", trace.model_flops_per_step},
          {"tokens_per_step", trace.tokens_per_step},
          {"scenario", trace.scenario},
          {"communicators", comms},
          {"nodes", nodes}};
}

Trace trace_from_json(const json& doc, const std::string& file) {
  const FieldReader r{file};
  if (!doc.is_object()) r.fail("/", "expected a JSON object (an fmsim trace)");
  if (!doc.contains("schema") || doc["schema"] != "fmsim.trace/1") r.fail("/schema", "expected \"fmsim.trace/1\"");
  Trace t;
  t.world = r.integer(r.at(doc, "world_size", ""), "/world_size", 1, kMaxWorld);
  t.symmetric = doc.contains("symmetric") ? r.boolean(doc["symmetric"], "/symmetric") : false;
  t.ranks = r.integers(r.at(doc, "ranks", ""), "/ranks", 0, t.world - 1, "a rank of the world of " + std::to_string(t.world));
  if (doc.contains("rank_gpu")) t.rank_gpu = r.integers(doc["rank_gpu"], "/rank_gpu", 0, kMaxInt, "a GPU ordinal");
  // Required (as the schema says): they set tokens/s and MFU, and are checked against the scenario.
  t.model_flops_per_step = r.number(r.at(doc, "model_flops_per_step", ""), "/model_flops_per_step", kMaxFlops);
  t.tokens_per_step = r.number(r.at(doc, "tokens_per_step", ""), "/tokens_per_step", kMaxTokens);
  t.scenario = doc.value("scenario", json());
  const json& comms = r.array(r.at(doc, "communicators", ""), "/communicators");
  for (std::size_t i = 0; i < comms.size(); ++i) {
    const std::string where = "/communicators/" + std::to_string(i);
    const json& c = r.object(comms[i], where);
    Communicator comm;
    comm.id = r.integer(r.at(c, "id", where), where + "/id", 0, kMaxInt);
    if (comm.id != static_cast<int>(i)) r.fail(where + "/id", "expected " + std::to_string(i) + " (ids 0, 1, 2, ... in order)");
    comm.kind = r.string(r.at(c, "kind", where), where + "/kind");
    comm.ranks = r.integers(r.at(c, "ranks", where), where + "/ranks", 0, t.world - 1, "a rank of the world of " + std::to_string(t.world));
    t.comms.push_back(std::move(comm));
  }
  const json& nodes = r.array(r.at(doc, "nodes", ""), "/nodes");
  const int node_count = static_cast<int>(std::min<std::size_t>(nodes.size(), kMaxInt));
  t.nodes.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "/nodes/" + std::to_string(i);
    const json& j = r.object(nodes[i], where);
    TraceNode n;
    n.id = r.integer(r.at(j, "id", where), where + "/id", 0, kMaxInt);
    if (n.id != static_cast<int>(i)) r.fail(where + "/id", "expected " + std::to_string(i) + " (ids in order)");
    n.rank = r.integer(r.at(j, "rank", where), where + "/rank", 0, t.world - 1, "a rank of the world of " + std::to_string(t.world));
    n.type = parse_name(kNodeTypes, r.at(j, "type", where), file + ": " + where + "/type");
    n.category = j.contains("category") ? parse_name(kCategories, j["category"], file + ": " + where + "/category") : Category::compute;
    if (j.contains("name")) n.name = r.string(j["name"], where + "/name");
    n.stream = j.contains("stream") ? r.string(j["stream"], where + "/stream") : "";  // none: no stream order (receives)
    if (j.contains("data_deps")) {
      n.deps = r.integers(j["data_deps"], where + "/data_deps", 0, node_count - 1, "the id of a node of this trace", true);
      for (int d : n.deps) {
        if (d == n.id) r.fail(where + "/data_deps", "node " + std::to_string(d) + " depends on itself");
      }
    }
    if (j.contains("duration_s")) n.duration_s = r.number(j["duration_s"], where + "/duration_s", kMaxDuration_s);
    if (n.type == NodeType::comp) {
      n.kernel = j.contains("kernel") ? parse_name(kKernels, j["kernel"], file + ": " + where + "/kernel") : Kernel::memory;
      if (j.contains("num_ops")) n.flops = r.number(j["num_ops"], where + "/num_ops", kMaxFlops);
      if (j.contains("tensor_size")) n.bytes = r.number(j["tensor_size"], where + "/tensor_size", kMaxBytes);
      // Keys per query and head dims below 1 (other than 0: not given) would drive the kernel's
      // efficiency to 0 and its time to infinity.
      if (j.contains("attention_span")) {
        n.attention_span = r.number(j["attention_span"], where + "/attention_span", kMaxGemmDim);
        if (n.attention_span > 0 && n.attention_span < 1) r.fail(where + "/attention_span", "0 (a long sequence) or at least 1 key per query");
      }
      if (j.contains("attention_steps")) n.attention_steps = r.integer(j["attention_steps"], where + "/attention_steps", 1, 1 << 20);
      if (j.contains("attention_head_dim")) {
        n.attention_head_dim = r.number(j["attention_head_dim"], where + "/attention_head_dim", 1024);
        if (n.attention_head_dim > 0 && n.attention_head_dim < 1) r.fail(where + "/attention_head_dim", "0 (128) or a head dim from 1 to 1024");
      }
      if (j.contains("attention_kernel")) {
        const std::string kernel = r.string(j["attention_kernel"], where + "/attention_kernel");
        if (kernel != "fused" && kernel != "flash2") r.fail(where + "/attention_kernel", "expected \"fused\" or \"flash2\"");
        n.attention_flash2 = kernel == "flash2";
      }
      if (j.contains("gemm_mnk")) {
        const json& mnk = r.array(j["gemm_mnk"], where + "/gemm_mnk");
        if (mnk.size() != 3) r.fail(where + "/gemm_mnk", "expected [m, n, k]");
        n.m = r.number(mnk[0], where + "/gemm_mnk/0", kMaxGemmDim);
        n.n = r.number(mnk[1], where + "/gemm_mnk/1", kMaxGemmDim);
        n.k = r.number(mnk[2], where + "/gemm_mnk/2", kMaxGemmDim);
      } else if (n.kernel == Kernel::gemm && n.duration_s < 0) {
        r.fail(where, "a gemm node needs gemm_mnk (its shape) or duration_s");
      }
      if (j.contains("repeat")) n.repeat = r.integer(j["repeat"], where + "/repeat", 1, kMaxRepeat);
      if (j.contains("fp8")) n.fp8 = r.boolean(j["fp8"], where + "/fp8");
      if (j.contains("fp4")) n.fp4 = r.boolean(j["fp4"], where + "/fp4");
      if (j.contains("fp8_split_accumulator")) n.fp8_split_accumulator = r.boolean(j["fp8_split_accumulator"], where + "/fp8_split_accumulator");
      if (j.contains("fp8_block_scaled")) n.fp8_block_scaled = r.boolean(j["fp8_block_scaled"], where + "/fp8_block_scaled");
      if (j.contains("sms_taken")) n.sms_taken = r.integer(j["sms_taken"], where + "/sms_taken", 0, kMaxSms);
    } else if (n.type == NodeType::coll) {
      n.op = parse_name(kCommTypes, r.at(j, "comm_type", where), file + ": " + where + "/comm_type");
      n.comm = r.integer(r.at(j, "comm_group", where), where + "/comm_group", 0, kMaxInt);
      if (n.comm >= static_cast<int>(t.comms.size())) {
        r.fail(where + "/comm_group", std::to_string(n.comm) + ": no such communicator (the trace has " + std::to_string(t.comms.size()) + ")");
      }
      n.comm_bytes = r.number(r.at(j, "comm_size", where), where + "/comm_size", kMaxBytes);
      if (j.contains("comm_bandwidth_share")) {
        n.comm_bandwidth_share = r.number(j["comm_bandwidth_share"], where + "/comm_bandwidth_share", 1.0);
        if (n.comm_bandwidth_share <= 0) {
          r.fail(where + "/comm_bandwidth_share", config::render_value(j["comm_bandwidth_share"]) + ": expected a share in (0, 1]");
        }
      }
    } else {
      const char* peer_key = n.type == NodeType::send ? "comm_dst" : "comm_src";
      n.peer = r.integer(r.at(j, peer_key, where), where + "/" + peer_key, 0, t.world - 1, "a rank of the world of " + std::to_string(t.world));
      if (n.peer == n.rank) r.fail(where + "/" + peer_key, std::to_string(n.peer) + ": the node's own rank");
      if (j.contains("comm_tag")) n.tag = r.integer(j["comm_tag"], where + "/comm_tag", kMinInt, kMaxInt);
      n.comm_bytes = r.number(r.at(j, "comm_size", where), where + "/comm_size", kMaxBytes);
    }
    t.nodes.push_back(std::move(n));
  }
  std::map<std::tuple<int, int, int>, int> unmatched;  // (src, dst, tag) -> sends - receives
  for (const auto& n : t.nodes) {
    if (n.type == NodeType::send) ++unmatched[{n.rank, n.peer, n.tag}];
    if (n.type == NodeType::recv) --unmatched[{n.peer, n.rank, n.tag}];
  }
  for (const auto& [key, count] : unmatched) {
    if (count != 0) {
      throw InputError(file + ": send/receive mismatch between ranks " + std::to_string(std::get<0>(key)) + " and " +
                       std::to_string(std::get<1>(key)) + " (tag " + std::to_string(std::get<2>(key)) + ")");
    }
  }
  check_trace(t, file);
  return t;
}

}  // namespace fmsim::workload
