// Chakra-style JSON for traces (docs/formats.md). Node types and collective names follow Chakra's
// execution-trace vocabulary (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE; ALL_REDUCE...).
#include <map>
#include <set>

#include "fmsim/common/error.hpp"
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
      if (n.fp8_split_accumulator) j["fp8_split_accumulator"] = true;
      if (n.sms_taken > 0) j["sms_taken"] = n.sms_taken;
      if (n.attention_span > 0) j["attention_span"] = n.attention_span;
    } else if (n.type == NodeType::coll) {
      j["comm_type"] = kCommTypes.at(n.op);
      j["comm_group"] = n.comm;
      j["comm_size"] = n.comm_bytes;
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
  auto fail = [&](const std::string& where, const std::string& what) -> void { throw InputError(file + ": " + where + ": " + what); };
  if (!doc.is_object()) fail("/", "expected a JSON object (an fmsim trace)");
  if (doc.value("schema", "") != "fmsim.trace/1") fail("/schema", "expected \"fmsim.trace/1\"");
  Trace t;
  try {
    t.world = doc.at("world_size").get<int>();
    t.symmetric = doc.value("symmetric", false);
    t.ranks = doc.at("ranks").get<std::vector<int>>();
    t.rank_gpu = doc.value("rank_gpu", std::vector<int>{});
    t.model_flops_per_step = doc.value("model_flops_per_step", 0.0);
    t.tokens_per_step = doc.value("tokens_per_step", 0.0);
    t.scenario = doc.value("scenario", json());
    for (const auto& c : doc.at("communicators")) {
      Communicator comm{c.at("id").get<int>(), c.at("kind").get<std::string>(), c.at("ranks").get<std::vector<int>>()};
      if (comm.id != static_cast<int>(t.comms.size())) fail("/communicators/" + std::to_string(t.comms.size()), "ids must be 0, 1, 2, ... in order");
      for (int r : comm.ranks) {
        if (r < 0 || r >= t.world) fail("/communicators/" + std::to_string(comm.id), "rank " + std::to_string(r) + " outside the world");
      }
      t.comms.push_back(std::move(comm));
    }
    const json& nodes = doc.at("nodes");
    t.nodes.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const json& j = nodes[i];
      const std::string where = "/nodes/" + std::to_string(i);
      TraceNode n;
      n.id = j.at("id").get<int>();
      if (n.id != static_cast<int>(i)) fail(where + "/id", "expected " + std::to_string(i) + " (ids in order)");
      n.rank = j.at("rank").get<int>();
      if (n.rank < 0 || n.rank >= t.world) fail(where + "/rank", "outside the world size");
      n.type = parse_name(kNodeTypes, j.at("type"), file + ": " + where + "/type");
      n.category = j.contains("category") ? parse_name(kCategories, j["category"], file + ": " + where + "/category") : Category::compute;
      n.name = j.value("name", "");
      n.stream = j.value("stream", "");
      n.deps = j.value("data_deps", std::vector<int>{});
      for (int d : n.deps) {
        if (d < 0 || d >= static_cast<int>(nodes.size()) || d == n.id) fail(where + "/data_deps", "unknown node " + std::to_string(d));
      }
      n.duration_s = j.value("duration_s", -1.0);
      if (n.type == NodeType::comp) {
        n.kernel = j.contains("kernel") ? parse_name(kKernels, j["kernel"], file + ": " + where + "/kernel") : Kernel::memory;
        n.flops = j.value("num_ops", 0.0);
        n.bytes = j.value("tensor_size", 0.0);
        n.attention_span = j.value("attention_span", 0.0);
        if (j.contains("gemm_mnk")) {
          auto mnk = j["gemm_mnk"].get<std::vector<double>>();
          if (mnk.size() != 3) fail(where + "/gemm_mnk", "expected [m, n, k]");
          n.m = mnk[0], n.n = mnk[1], n.k = mnk[2];
        }
        n.repeat = j.value("repeat", 1);
        n.fp8 = j.value("fp8", false);
        n.fp8_split_accumulator = j.value("fp8_split_accumulator", false);
        n.sms_taken = j.value("sms_taken", 0);
      } else if (n.type == NodeType::coll) {
        n.op = parse_name(kCommTypes, j.at("comm_type"), file + ": " + where + "/comm_type");
        n.comm = j.at("comm_group").get<int>();
        if (n.comm < 0 || n.comm >= static_cast<int>(t.comms.size())) fail(where + "/comm_group", "unknown communicator");
        n.comm_bytes = j.at("comm_size").get<double>();
      } else {
        n.peer = j.at(n.type == NodeType::send ? "comm_dst" : "comm_src").get<int>();
        if (n.peer < 0 || n.peer >= t.world) fail(where, "peer rank outside the world size");
        n.tag = j.value("comm_tag", 0);
        n.comm_bytes = j.at("comm_size").get<double>();
      }
      t.nodes.push_back(std::move(n));
    }
  } catch (const json::exception& error) {
    throw InputError(file + ": not a valid fmsim trace: " + error.what());
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
  return t;
}

}  // namespace fmsim::workload
