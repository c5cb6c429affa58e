// Chakra execution traces in and out (chakra_trace.hpp). Node mapping, both ways:
//   COMP_NODE      <-> COMP_NODE (fmsim_kernel and the shape attributes when fmsim wrote it; otherwise
//                      its duration_micros, or a memory-bound kernel of tensor_size bytes)
//   COMM_COLL_NODE <-> COMM_COLL_NODE (comm_type, comm_size, pg_name -> the communicator)
//   COMM_SEND_NODE, COMM_RECV_NODE <-> the same (comm_dst / comm_src, comm_tag, comm_size)
//   METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE -> a memory-bound compute node (tensor_size bytes)
// Chakra node ids are per rank; fmsim's are global (rank 0's nodes first). Collective types fmsim does not
// model (GATHER, SCATTER) and node types it does not replay (STORAGE, BATCH, CHECKPOINT) are refused.
#include "fmsim/workload/chakra_trace.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "chakra_et.pb.h"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"

namespace fmsim::workload {

namespace {

namespace pb = ChakraProtoMsg;
using nlohmann::json;

constexpr const char* kVersion = "0.0.4";  // Chakra's GlobalMetadata version of this schema
constexpr std::uint64_t kMaxMessageBytes = 1ull << 31;
constexpr int kMaxRanks = 1 << 20;

std::string rank_file(const std::string& prefix, int rank) { return prefix + "." + std::to_string(rank) + ".et"; }

std::string prefix_of(const std::string& path) {
  static const std::regex rank_suffix("(.*)\\.([0-9]+)\\.et");
  std::smatch m;
  if (std::regex_match(path, m, rank_suffix)) return m[1];
  return path;
}

// ---------------------------------------------------------------------------------------------------
// Reading

/// A numeric attribute of any of Chakra's scalar types (converters write int64, uint64 or int32 alike).
bool numeric(const pb::AttributeProto& a, double& out) {
  switch (a.value_case()) {
    case pb::AttributeProto::kDoubleVal: out = a.double_val(); return true;
    case pb::AttributeProto::kFloatVal: out = a.float_val(); return true;
    case pb::AttributeProto::kInt32Val: out = a.int32_val(); return true;
    case pb::AttributeProto::kInt64Val: out = static_cast<double>(a.int64_val()); return true;
    case pb::AttributeProto::kUint32Val: out = a.uint32_val(); return true;
    case pb::AttributeProto::kUint64Val: out = static_cast<double>(a.uint64_val()); return true;
    case pb::AttributeProto::kSint32Val: out = a.sint32_val(); return true;
    case pb::AttributeProto::kSint64Val: out = static_cast<double>(a.sint64_val()); return true;
    case pb::AttributeProto::kFixed32Val: out = a.fixed32_val(); return true;
    case pb::AttributeProto::kFixed64Val: out = static_cast<double>(a.fixed64_val()); return true;
    case pb::AttributeProto::kSfixed32Val: out = a.sfixed32_val(); return true;
    case pb::AttributeProto::kSfixed64Val: out = static_cast<double>(a.sfixed64_val()); return true;
    case pb::AttributeProto::kBoolVal: out = a.bool_val() ? 1 : 0; return true;
    default: return false;
  }
}

class Attributes {
 public:
  Attributes(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, std::string where)
      : where_(std::move(where)) {
    for (const auto& a : attrs) by_name_[a.name()] = &a;
  }
  bool has(const std::string& name) const { return by_name_.count(name) > 0; }
  double number(const std::string& name, double fallback) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return fallback;
    double v = 0;
    if (!numeric(*it->second, v) || !std::isfinite(v)) throw InputError(where_ + ": attribute " + name + ": expected a number");
    return v;
  }
  /// A whole number within +-2^53 (an integer attribute, or a double that holds one); others are bad
  /// input, before any cast (a fuzzed 1e300 would overflow it).
  long long integer(const std::string& name, long long fallback) const {
    if (!has(name)) return fallback;
    const double v = number(name, 0);
    if (std::fabs(v) > 9007199254740992.0 || v != std::floor(v)) {
      std::ostringstream text;
      text << v;
      throw InputError(where_ + ": attribute " + name + ": " + text.str() + ": expected a whole number");
    }
    return static_cast<long long>(v);
  }
  bool flag(const std::string& name) const { return number(name, 0) != 0; }
  std::string text(const std::string& name, const std::string& fallback) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return fallback;
    if (it->second->value_case() == pb::AttributeProto::kStringVal) return it->second->string_val();
    double v = 0;
    if (numeric(*it->second, v)) return std::to_string(integer(name, 0));
    throw InputError(where_ + ": attribute " + name + ": expected a string");
  }
  std::vector<double> numbers(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return {};
    const auto& a = *it->second;
    std::vector<double> out;
    switch (a.value_case()) {
      case pb::AttributeProto::kDoubleList: out.assign(a.double_list().values().begin(), a.double_list().values().end()); break;
      case pb::AttributeProto::kInt64List: for (auto v : a.int64_list().values()) out.push_back(static_cast<double>(v)); break;
      case pb::AttributeProto::kUint64List: for (auto v : a.uint64_list().values()) out.push_back(static_cast<double>(v)); break;
      case pb::AttributeProto::kInt32List: for (auto v : a.int32_list().values()) out.push_back(v); break;
      default: throw InputError(where_ + ": attribute " + name + ": expected a list of numbers");
    }
    return out;
  }
  std::vector<std::string> texts(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return {};
    if (it->second->value_case() != pb::AttributeProto::kStringList) throw InputError(where_ + ": attribute " + name + ": expected a list of strings");
    return {it->second->string_list().values().begin(), it->second->string_list().values().end()};
  }

 private:
  std::string where_;
  std::map<std::string, const pb::AttributeProto*> by_name_;
};

/// The length-delimited messages of one file: (byte offset, bytes).
std::vector<std::pair<std::size_t, std::string_view>> split_messages(const std::string& file, const std::string& bytes) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t start = pos;
    std::uint64_t length = 0;
    int shift = 0;
    while (true) {
      if (pos >= bytes.size()) {
        throw InputError(file + ": truncated at byte " + std::to_string(start) + ": the file ends inside a message's length prefix");
      }
      const auto byte = static_cast<unsigned char>(bytes[pos++]);
      length |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
      shift += 7;
      if (shift > 35) throw InputError(file + ": byte " + std::to_string(start) + ": not a Chakra trace (a message length prefix longer than 5 bytes)");
    }
    if (length > kMaxMessageBytes) {
      throw InputError(file + ": byte " + std::to_string(start) + ": not a Chakra trace (a message of " + std::to_string(length) + " bytes)");
    }
    if (length > bytes.size() - pos) {
      throw InputError(file + ": truncated at byte " + std::to_string(start) + ": a message of " + std::to_string(length) +
                       " bytes is announced but only " + std::to_string(bytes.size() - pos) + " follow");
    }
    out.push_back({start, std::string_view(bytes).substr(pos, length)});
    pos += length;
  }
  return out;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read it");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string node_type_name(int type) {
  return pb::NodeType_IsValid(type) ? pb::NodeType_Name(static_cast<pb::NodeType>(type)) : "unknown";
}

const std::map<int, const char*> kCollectives = {{pb::ALL_REDUCE, "ALL_REDUCE"},       {pb::REDUCE, "REDUCE"},
                                                 {pb::ALL_GATHER, "ALL_GATHER"},       {pb::BROADCAST, "BROADCAST"},
                                                 {pb::ALL_TO_ALL, "ALL_TO_ALL"},       {pb::REDUCE_SCATTER, "REDUCE_SCATTER"},
                                                 {pb::REDUCE_SCATTER_BLOCK, "REDUCE_SCATTER"}, {pb::BARRIER, "ALL_REDUCE"}};

struct Reader {
  std::string prefix;
  json doc;
  std::map<std::string, int> pg_id;  ///< pg_name -> communicator id
  int world_comm = -1;

  int world() const { return doc["world_size"].get<int>(); }

  int communicator_for(const std::string& pg, const std::string& where) {
    if (pg.empty()) {
      if (world_comm < 0) {
        world_comm = static_cast<int>(doc["communicators"].size());
        std::vector<int> all(world());
        for (int r = 0; r < world(); ++r) all[r] = r;
        doc["communicators"].push_back({{"id", world_comm}, {"kind", "world"}, {"ranks", all}});
      }
      return world_comm;
    }
    auto it = pg_id.find(pg);
    if (it == pg_id.end()) {
      throw InputError(where + ": process group '" + pg + "' is not in " + prefix + ".comm_groups.json" +
                       (pg_id.empty() ? " (there is no such file: give one mapping each pg_name to its ranks)" : ""));
    }
    return it->second;
  }
};

}  // namespace

bool is_chakra_trace(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(rank_file(path, 0), ec)) return true;
  const std::string prefix = prefix_of(path);
  return prefix != path && std::filesystem::is_regular_file(rank_file(prefix, 0), ec);
}

json read_chakra_trace(const std::string& path) {
  Reader r;
  r.prefix = prefix_of(path);
  int ranks = 0;
  std::error_code ec;
  while (ranks < kMaxRanks && std::filesystem::is_regular_file(rank_file(r.prefix, ranks), ec)) ++ranks;
  if (ranks == 0) throw InputError(path + ": no Chakra trace: " + rank_file(r.prefix, 0) + " does not exist");
  r.doc = {{"schema", "fmsim.trace/1"}, {"world_size", ranks}, {"symmetric", false}, {"communicators", json::array()},
           {"nodes", json::array()}};
  // Process groups (ASTRA-sim's comm-group file), in the order of their names (numerically when numbers).
  const std::string groups_file = r.prefix + ".comm_groups.json";
  if (std::filesystem::is_regular_file(groups_file, ec)) {
    json groups;
    try {
      groups = json::parse(read_bytes(groups_file));
    } catch (const json::parse_error& e) {
      throw InputError(groups_file + ": not JSON: " + e.what());
    }
    if (!groups.is_object()) throw InputError(groups_file + ": expected an object mapping each pg_name to its ranks");
    std::vector<std::pair<std::string, json>> entries;
    for (const auto& [name, members] : groups.items()) entries.emplace_back(name, members);
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      const bool an = !a.first.empty() && a.first.find_first_not_of("0123456789") == std::string::npos;
      const bool bn = !b.first.empty() && b.first.find_first_not_of("0123456789") == std::string::npos;
      if (an && bn && a.first.size() != b.first.size()) return a.first.size() < b.first.size();
      return a.first < b.first;
    });
    for (const auto& [name, members] : entries) {
      const int id = static_cast<int>(r.doc["communicators"].size());
      r.pg_id[name] = id;
      r.doc["communicators"].push_back({{"id", id}, {"kind", "pg"}, {"ranks", members}});  // trace_from_json checks them
    }
  }
  std::vector<int> with_nodes;
  std::vector<std::string> kinds;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string file = rank_file(r.prefix, rank);
    const std::string bytes = read_bytes(file);
    const auto messages = split_messages(file, bytes);
    if (messages.empty()) throw InputError(file + ": empty: a Chakra trace starts with its GlobalMetadata");
    pb::GlobalMetadata meta;
    if (!meta.ParseFromArray(messages[0].second.data(), static_cast<int>(messages[0].second.size()))) {
      throw InputError(file + ": byte 0: not a Chakra GlobalMetadata message");
    }
    const Attributes meta_attrs(meta.attr(), file + ": GlobalMetadata");
    if (meta_attrs.has("fmsim_world_size") && meta_attrs.integer("fmsim_world_size", 0) != ranks) {
      throw InputError(file + ": GlobalMetadata: fmsim_world_size " + std::to_string(meta_attrs.integer("fmsim_world_size", 0)) +
                       " but " + std::to_string(ranks) + " rank files " + r.prefix + ".0.et ... were found");
    }
    if (rank == 0) {
      if (meta_attrs.has("fmsim_tokens_per_step")) r.doc["tokens_per_step"] = meta_attrs.number("fmsim_tokens_per_step", 0);
      if (meta_attrs.has("fmsim_model_flops_per_step")) r.doc["model_flops_per_step"] = meta_attrs.number("fmsim_model_flops_per_step", 0);
      const auto gpus = meta_attrs.numbers("fmsim_rank_gpu");
      if (!gpus.empty()) {
        json rank_gpu = json::array();
        for (double g : gpus) {
          if (!std::isfinite(g) || g < 0 || g > 1e9 || g != std::floor(g)) {
            std::ostringstream text;
            text << g;
            throw InputError(file + ": GlobalMetadata: fmsim_rank_gpu " + text.str() + ": expected GPU indices from 0");
          }
          rank_gpu.push_back(static_cast<long long>(g));
        }
        r.doc["rank_gpu"] = rank_gpu;
      }
      kinds = meta_attrs.texts("fmsim_communicator_kinds");
      const std::string scenario = meta_attrs.text("fmsim_scenario", "");
      if (!scenario.empty()) {
        // The project's strict reader: a syntax error or a number beyond double's range (a fuzzed 2e308
        // escaped nlohmann's parse as out_of_range) is bad input naming the attribute.
        r.doc["scenario"] = config::parse_json_text(scenario, file + ": GlobalMetadata: fmsim_scenario").root;
      }
    }
    // Node ids are per rank: map them to global ids first (a dependency may name a later node).
    std::vector<pb::Node> nodes(messages.size() - 1);
    std::map<std::uint64_t, int> global_of;
    const int first = static_cast<int>(r.doc["nodes"].size());
    for (std::size_t i = 1; i < messages.size(); ++i) {
      pb::Node& node = nodes[i - 1];
      if (!node.ParseFromArray(messages[i].second.data(), static_cast<int>(messages[i].second.size()))) {
        throw InputError(file + ": byte " + std::to_string(messages[i].first) + ": not a Chakra Node message");
      }
      if (!global_of.emplace(node.id(), first + static_cast<int>(i) - 1).second) {
        throw InputError(file + ": node id " + std::to_string(node.id()) + " appears twice");
      }
    }
    if (!nodes.empty()) with_nodes.push_back(rank);
    for (const pb::Node& node : nodes) {
      const std::string where = file + ": node " + std::to_string(node.id()) + (node.name().empty() ? "" : " (" + node.name() + ")");
      const Attributes a(node.attr(), where);
      json j = {{"id", static_cast<int>(r.doc["nodes"].size())}, {"rank", rank}, {"name", node.name()}};
      json deps = json::array();
      for (const auto* list : {&node.data_deps(), &node.ctrl_deps()}) {
        for (std::uint64_t d : *list) {
          auto it = global_of.find(d);
          if (it == global_of.end()) throw InputError(where + ": depends on node " + std::to_string(d) + ", which this file does not have");
          deps.push_back(it->second);
        }
      }
      j["data_deps"] = deps;
      const bool fmsim_written = a.has("fmsim_kernel") || a.has("fmsim_stream");
      const int type = static_cast<int>(node.type());
      switch (type) {
        case pb::COMP_NODE:
        case pb::METADATA_NODE:
        case pb::MEM_LOAD_NODE:
        case pb::MEM_STORE_NODE: {
          j["type"] = "COMP_NODE";
          j["category"] = a.text("fmsim_category", "compute");
          j["stream"] = a.text("fmsim_stream", a.flag("is_cpu_op") ? "host" : "compute");
          const double flops = a.number("fmsim_num_ops", a.number("num_ops", 0));
          const double bytes_moved = a.number("fmsim_tensor_size", a.number("tensor_size", 0));
          if (flops < 0 || bytes_moved < 0) throw InputError(where + ": num_ops and tensor_size must not be negative");
          if (flops > 0) j["num_ops"] = flops;
          if (bytes_moved > 0) j["tensor_size"] = bytes_moved;
          if (type == pb::COMP_NODE && fmsim_written) {
            j["kernel"] = a.text("fmsim_kernel", "memory");
            const auto mnk = a.numbers("fmsim_gemm_mnk");
            if (!mnk.empty()) j["gemm_mnk"] = mnk;
            if (a.has("fmsim_repeat")) j["repeat"] = a.integer("fmsim_repeat", 1);
            for (const char* flag : {"fp8", "fp4", "fp8_split_accumulator", "fp8_block_scaled"}) {
              if (a.flag(std::string("fmsim_") + flag)) j[flag] = true;
            }
            if (a.has("fmsim_sms_taken")) j["sms_taken"] = a.integer("fmsim_sms_taken", 0);
            if (a.has("fmsim_attention_span")) j["attention_span"] = a.number("fmsim_attention_span", 0);
            if (a.has("fmsim_attention_steps")) j["attention_steps"] = a.integer("fmsim_attention_steps", 1);
            if (a.has("fmsim_attention_kernel")) j["attention_kernel"] = a.text("fmsim_attention_kernel", "fused");
            if (a.has("fmsim_attention_head_dim")) j["attention_head_dim"] = a.number("fmsim_attention_head_dim", 0);
            if (a.has("fmsim_duration_s")) j["duration_s"] = a.number("fmsim_duration_s", 0);
          } else if (type == pb::COMP_NODE) {
            // A converter's node: its measured duration; without one, a memory-bound kernel of tensor_size.
            j["kernel"] = "memory";
            if (node.duration_micros() > 0) {
              j["duration_s"] = static_cast<double>(node.duration_micros()) * 1e-6;
            } else if (flops > 0 && bytes_moved <= 0) {
              throw InputError(where + ": a COMP_NODE with num_ops but neither duration_micros nor tensor_size: fmsim does not "
                               "guess a kernel's time from its FLOPs alone (record durations, e.g. Chakra's trace linker)");
            }
          } else {
            j["kernel"] = "memory";  // METADATA / MEM_LOAD / MEM_STORE: moves tensor_size bytes (0 for metadata)
            if (node.duration_micros() > 0) j["duration_s"] = static_cast<double>(node.duration_micros()) * 1e-6;
          }
          break;
        }
        case pb::COMM_COLL_NODE: {
          j["type"] = "COMM_COLL_NODE";
          const long long comm_type = a.integer("comm_type", -1);
          const bool in_range = comm_type >= 0 && comm_type <= std::numeric_limits<int>::max();
          auto op = in_range ? kCollectives.find(static_cast<int>(comm_type)) : kCollectives.end();
          if (op == kCollectives.end()) {
            const std::string name = in_range && pb::CollectiveCommType_IsValid(static_cast<int>(comm_type))
                                         ? pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(static_cast<int>(comm_type)))
                                         : "unknown";
            throw InputError(where + ": comm_type " + (a.has("comm_type") ? std::to_string(comm_type) + " (" + name + ")" : "missing") +
                             ": fmsim replays ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER(_BLOCK) and BARRIER");
          }
          j["comm_type"] = op->second;
          const double size = comm_type == pb::BARRIER ? 4.0 : a.number("fmsim_comm_size", a.number("comm_size", -1));
          if (size < 0) throw InputError(where + ": comm_size missing (or negative)");
          j["comm_size"] = size;
          if (a.has("fmsim_comm_bandwidth_share")) j["comm_bandwidth_share"] = a.number("fmsim_comm_bandwidth_share", 1.0);
          const std::string pg = a.text("pg_name", "");
          j["comm_group"] = r.communicator_for(pg, where);
          j["category"] = a.text("fmsim_category", "dp_comm");
          j["stream"] = a.text("fmsim_stream", pg.empty() ? "comm" : "comm:" + pg);
          break;
        }
        case pb::COMM_SEND_NODE:
        case pb::COMM_RECV_NODE: {
          const bool send = type == pb::COMM_SEND_NODE;
          j["type"] = send ? "COMM_SEND_NODE" : "COMM_RECV_NODE";
          const char* peer_key = send ? "comm_dst" : "comm_src";
          if (!a.has(peer_key)) throw InputError(where + ": " + peer_key + " missing");
          j[peer_key] = a.integer(peer_key, 0);
          j["comm_tag"] = a.integer("comm_tag", 0);
          const double size = a.number("fmsim_comm_size", a.number("comm_size", -1));
          if (size < 0) throw InputError(where + ": comm_size missing (or negative)");
          j["comm_size"] = size;
          j["category"] = a.text("fmsim_category", "pp_comm");
          const std::string stream = a.text("fmsim_stream", send ? "p2p" : "");
          if (!stream.empty()) j["stream"] = stream;
          break;
        }
        default:
          throw InputError(where + ": node type " + std::to_string(type) + " (" + node_type_name(type) +
                           ") is not one fmsim replays (COMP, COMM_COLL, COMM_SEND, COMM_RECV, MEM_LOAD, MEM_STORE, METADATA)");
      }
      r.doc["nodes"].push_back(std::move(j));
    }
  }
  r.doc["ranks"] = with_nodes;
  for (std::size_t i = 0; i < kinds.size() && i < r.doc["communicators"].size(); ++i) r.doc["communicators"][i]["kind"] = kinds[i];
  return r.doc;
}

// ---------------------------------------------------------------------------------------------------
// Writing

namespace {

void attr(pb::Node& n, const std::string& name, const std::function<void(pb::AttributeProto&)>& set) {
  auto* a = n.add_attr();
  a->set_name(name);
  set(*a);
}

void append_message(std::string& out, const google::protobuf::MessageLite& m) {
  std::string bytes = m.SerializeAsString();
  std::uint64_t length = bytes.size();
  do {
    unsigned char byte = length & 0x7f;
    length >>= 7;
    if (length) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (length);
  out += bytes;
}

bool integral(double x) { return std::floor(x) == x && std::abs(x) < 9e15; }

const std::map<std::string, pb::CollectiveCommType> kCommTypeOf = {
    {"ALL_REDUCE", pb::ALL_REDUCE}, {"REDUCE", pb::REDUCE},         {"ALL_GATHER", pb::ALL_GATHER},
    {"BROADCAST", pb::BROADCAST},   {"ALL_TO_ALL", pb::ALL_TO_ALL}, {"REDUCE_SCATTER", pb::REDUCE_SCATTER}};

}  // namespace

// The value types follow Chakra's ET feeder (src/feeder/et_feeder_node.cpp), which ASTRA-sim reads traces
// with: is_cpu_op bool, num_ops int64, tensor_size uint64, comm_type int64, comm_size int64, comm_src,
// comm_dst and comm_tag int32; pg_name a string (ASTRA-sim's comm-group file).
std::vector<std::pair<std::string, std::string>> chakra_files(const Trace& trace, const std::string& prefix,
                                                             const std::function<double(const TraceNode&)>& duration_s) {
  if (trace.symmetric) {
    throw InputError("a Chakra trace holds every rank: write it from a full-fidelity trace (--fidelity full)");
  }
  const json doc = trace_to_json(trace);  // the same field names and values the JSON form has
  std::vector<std::vector<const TraceNode*>> by_rank(trace.world);
  std::vector<int> local_id(trace.nodes.size(), -1);
  for (const auto& n : trace.nodes) {
    local_id[n.id] = static_cast<int>(by_rank[n.rank].size());
    by_rank[n.rank].push_back(&n);
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (int rank = 0; rank < trace.world; ++rank) {
    std::string out;
    pb::GlobalMetadata meta;
    meta.set_version(kVersion);
    auto meta_attr = [&meta](const std::string& name) {
      auto* a = meta.add_attr();
      a->set_name(name);
      return a;
    };
    meta_attr("fmsim_world_size")->set_int64_val(trace.world);
    meta_attr("fmsim_rank")->set_int64_val(rank);
    if (rank == 0) {
      meta_attr("fmsim_tokens_per_step")->set_double_val(trace.tokens_per_step);
      meta_attr("fmsim_model_flops_per_step")->set_double_val(trace.model_flops_per_step);
      auto* gpus = meta_attr("fmsim_rank_gpu")->mutable_int64_list();
      for (int g : trace.rank_gpu) gpus->add_values(g);
      auto* kinds = meta_attr("fmsim_communicator_kinds")->mutable_string_list();
      for (const auto& c : trace.comms) kinds->add_values(c.kind);
      if (!trace.scenario.is_null()) meta_attr("fmsim_scenario")->set_string_val(trace.scenario.dump());
    }
    append_message(out, meta);
    for (const TraceNode* n : by_rank[rank]) {
      const json& j = doc["nodes"][n->id];
      pb::Node node;
      node.set_id(static_cast<std::uint64_t>(local_id[n->id]));
      node.set_name(n->name);
      for (int d : n->deps) {
        if (trace.nodes[d].rank != rank) {
          throw InputError("node " + std::to_string(n->id) + " depends on node " + std::to_string(d) + " of rank " +
                           std::to_string(trace.nodes[d].rank) + ": a Chakra trace keeps each rank's dependencies in its own file");
        }
        node.add_data_deps(static_cast<std::uint64_t>(local_id[d]));
      }
      attr(node, "is_cpu_op", [&](auto& a) { a.set_bool_val(n->stream == "host"); });
      attr(node, "fmsim_category", [&](auto& a) { a.set_string_val(j["category"].get<std::string>()); });
      if (!n->stream.empty()) attr(node, "fmsim_stream", [&](auto& a) { a.set_string_val(n->stream); });
      if (n->type == NodeType::comp) {
        node.set_type(pb::COMP_NODE);
        const double seconds = duration_s(*n);
        node.set_duration_micros(static_cast<std::uint64_t>(std::llround(std::max(0.0, seconds) * 1e6)));
        attr(node, "num_ops", [&](auto& a) { a.set_int64_val(std::llround(n->flops)); });
        attr(node, "tensor_size", [&](auto& a) { a.set_uint64_val(static_cast<std::uint64_t>(std::llround(n->bytes))); });
        if (!integral(n->flops)) attr(node, "fmsim_num_ops", [&](auto& a) { a.set_double_val(n->flops); });
        if (!integral(n->bytes)) attr(node, "fmsim_tensor_size", [&](auto& a) { a.set_double_val(n->bytes); });
        attr(node, "fmsim_kernel", [&](auto& a) { a.set_string_val(j["kernel"].get<std::string>()); });
        if (j.contains("gemm_mnk")) {
          attr(node, "fmsim_gemm_mnk", [&](auto& a) {
            for (const auto& v : j["gemm_mnk"]) a.mutable_double_list()->add_values(v.get<double>());
          });
        }
        if (n->repeat != 1) attr(node, "fmsim_repeat", [&](auto& a) { a.set_int64_val(n->repeat); });
        if (n->fp8) attr(node, "fmsim_fp8", [&](auto& a) { a.set_bool_val(true); });
        if (n->fp4) attr(node, "fmsim_fp4", [&](auto& a) { a.set_bool_val(true); });
        if (n->fp8_split_accumulator) attr(node, "fmsim_fp8_split_accumulator", [&](auto& a) { a.set_bool_val(true); });
        if (n->fp8_block_scaled) attr(node, "fmsim_fp8_block_scaled", [&](auto& a) { a.set_bool_val(true); });
        if (n->sms_taken > 0) attr(node, "fmsim_sms_taken", [&](auto& a) { a.set_int64_val(n->sms_taken); });
        if (n->attention_span > 0) attr(node, "fmsim_attention_span", [&](auto& a) { a.set_double_val(n->attention_span); });
        if (n->attention_steps > 1) attr(node, "fmsim_attention_steps", [&](auto& a) { a.set_int64_val(n->attention_steps); });
        if (n->attention_flash2) attr(node, "fmsim_attention_kernel", [&](auto& a) { a.set_string_val("flash2"); });
        if (n->attention_head_dim > 0) attr(node, "fmsim_attention_head_dim", [&](auto& a) { a.set_double_val(n->attention_head_dim); });
        if (n->duration_s >= 0) attr(node, "fmsim_duration_s", [&](auto& a) { a.set_double_val(n->duration_s); });
      } else if (n->type == NodeType::coll) {
        node.set_type(pb::COMM_COLL_NODE);
        attr(node, "comm_type", [&](auto& a) { a.set_int64_val(kCommTypeOf.at(j["comm_type"].get<std::string>())); });
        attr(node, "comm_size", [&](auto& a) { a.set_int64_val(std::llround(n->comm_bytes)); });
        if (!integral(n->comm_bytes)) attr(node, "fmsim_comm_size", [&](auto& a) { a.set_double_val(n->comm_bytes); });
        if (n->comm_bandwidth_share != 1.0) {
          attr(node, "fmsim_comm_bandwidth_share", [&](auto& a) { a.set_double_val(n->comm_bandwidth_share); });
        }
        attr(node, "pg_name", [&](auto& a) { a.set_string_val(std::to_string(n->comm)); });
      } else {
        const bool send = n->type == NodeType::send;
        node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
        // int32, as Chakra's ET feeder (which ASTRA-sim uses) reads comm_src, comm_dst and comm_tag.
        attr(node, "comm_src", [&](auto& a) { a.set_int32_val(send ? rank : n->peer); });
        attr(node, "comm_dst", [&](auto& a) { a.set_int32_val(send ? n->peer : rank); });
        attr(node, "comm_tag", [&](auto& a) { a.set_int32_val(n->tag); });
        attr(node, "comm_size", [&](auto& a) { a.set_int64_val(std::llround(n->comm_bytes)); });
        if (!integral(n->comm_bytes)) attr(node, "fmsim_comm_size", [&](auto& a) { a.set_double_val(n->comm_bytes); });
      }
      append_message(out, node);
    }
    files.push_back({rank_file(prefix, rank), std::move(out)});
  }
  json groups = json::object();
  for (const auto& c : trace.comms) groups[std::to_string(c.id)] = c.ranks;
  files.push_back({prefix + ".comm_groups.json", groups.dump() + "\n"});
  return files;
}

}  // namespace fmsim::workload
