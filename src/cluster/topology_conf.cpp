// Slurm topology.conf reading (topology_conf.hpp).
#include "fmsim/cluster/topology_conf.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"

namespace fmsim::cluster {

namespace {

constexpr std::size_t kMaxHosts = 1 << 20;

/// Splits at commas outside brackets.
std::vector<std::string> top_level_items(const std::string& text) {
  std::vector<std::string> items;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) throw std::invalid_argument("a ']' without its '['");
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) throw std::invalid_argument("a '[' without its ']'");
  items.push_back(current);
  return items;
}

long long parse_index(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("'" + text + "' is not a number");
  }
  return std::stoll(text);
}

/// One name with bracket groups: the first group expanded, the rest recursively.
void expand_one(const std::string& name, std::vector<std::string>& out, std::size_t max_hosts) {
  const auto open = name.find('[');
  if (open == std::string::npos) {
    if (name.empty()) throw std::invalid_argument("an empty host name");
    if (out.size() >= max_hosts) throw std::invalid_argument("more than " + std::to_string(max_hosts) + " hosts");
    out.push_back(name);
    return;
  }
  const auto close = name.find(']', open);
  const std::string prefix = name.substr(0, open), rest = name.substr(close + 1), inside = name.substr(open + 1, close - open - 1);
  // An empty group names no host: every name with it would expand to nothing, after walking every
  // combination of the groups before it (a fuzzed file: 8^20 prefixes, no leaf, no end).
  if (inside.empty()) throw std::invalid_argument("an empty [] group in " + name);
  std::stringstream ranges(inside);
  std::string range;
  while (std::getline(ranges, range, ',')) {
    const auto dash = range.find('-');
    const std::string lo_text = dash == std::string::npos ? range : range.substr(0, dash);
    const std::string hi_text = dash == std::string::npos ? range : range.substr(dash + 1);
    const long long lo = parse_index(lo_text), hi = parse_index(hi_text);
    if (hi < lo) throw std::invalid_argument("range " + range + " runs backwards");
    if (hi - lo >= static_cast<long long>(std::min(max_hosts, kMaxHosts))) {
      throw std::invalid_argument("range " + range + " names more than " + std::to_string(std::min(max_hosts, kMaxHosts)) + " hosts");
    }
    for (long long i = lo; i <= hi; ++i) {
      std::string index = std::to_string(i);
      if (index.size() < lo_text.size()) index = std::string(lo_text.size() - index.size(), '0') + index;  // zero padding
      expand_one(prefix + index + rest, out, max_hosts);
    }
  }
}

/// A `SwitchName=U Switches=LIST` line: a switch above others, resolved once every leaf switch is known.
struct UpperSwitch {
  std::string name, where;
  std::vector<std::string> children;
};

/// The block level of a topology/tree file: the switches directly above the leaf switches. Every switch a
/// Switches= list names is a leaf switch or another upper switch of the file (a misspelt name would drop
/// the level silently); a leaf switch under none of them is a block of its own.
void set_block_level(SlurmTopology& t, const std::vector<UpperSwitch>& uppers) {
  std::map<std::string, int> leaf_index;
  for (std::size_t g = 0; g < t.group_names.size(); ++g) leaf_index[t.group_names[g]] = static_cast<int>(g);
  std::map<std::string, std::string> upper_where;
  for (const auto& upper : uppers) {
    if (leaf_index.count(upper.name) || upper_where.count(upper.name)) {
      throw InputError(upper.where + ": SwitchName=" + upper.name + " is already defined" +
                       (upper_where.count(upper.name) ? " at " + upper_where[upper.name] : " as a leaf switch") + " (one line per switch)");
    }
    upper_where[upper.name] = upper.where;
  }
  std::vector<int> parent(t.group_names.size(), -1);
  for (const auto& upper : uppers) {
    int block = -1;
    std::set<std::string> seen;
    for (const auto& child : upper.children) {
      if (!seen.insert(child).second) throw InputError(upper.where + ": Switches= lists " + child + " twice");
      const auto leaf = leaf_index.find(child);
      if (leaf == leaf_index.end()) {
        if (upper_where.count(child)) continue;  // a switch of a higher level
        throw InputError(upper.where + ": Switches= names " + child + ", which is no switch of the file (neither a SwitchName=... Nodes=... " +
                         "leaf switch nor a SwitchName=... Switches=... line)");
      }
      if (parent[leaf->second] >= 0) {
        throw InputError(upper.where + ": leaf switch " + child + " is already under " + t.block_names[parent[leaf->second]] +
                         " (a leaf switch sits under one switch of the level above)");
      }
      if (block < 0) {
        block = static_cast<int>(t.block_names.size());
        t.block_names.push_back(upper.name);
      }
      parent[leaf->second] = block;
    }
  }
  if (!t.block_names.empty()) {
    for (std::size_t g = 0; g < parent.size(); ++g) {
      if (parent[g] < 0) {  // no switch above it: a block of its own
        parent[g] = static_cast<int>(t.block_names.size());
        t.block_names.push_back(t.group_names[g]);
      }
    }
    t.group_block = std::move(parent);
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& hostlist, std::size_t max_hosts) {
  std::vector<std::string> out;
  max_hosts = std::min(max_hosts, kMaxHosts);
  for (const auto& item : top_level_items(hostlist)) expand_one(item, out, max_hosts);
  return out;
}

SlurmTopology read_topology_conf(const std::filesystem::path& path, int cluster_nodes) {
  config::require_regular_file(path, "the Slurm topology.conf");
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  SlurmTopology t;
  std::map<std::string, int> index_of;
  std::string line;
  int number = 0;
  std::vector<UpperSwitch> uppers;  // SwitchName=U Switches=... lines, resolved once every leaf switch is known
  while (std::getline(in, line)) {
    ++number;
    const std::string where = path.string() + ":" + std::to_string(number);
    const auto hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::stringstream words(line);
    std::string word;
    std::map<std::string, std::string> fields;
    std::vector<std::string> order;
    while (words >> word) {
      const auto eq = word.find('=');
      if (eq == std::string::npos || eq == 0) throw InputError(where + ": '" + word + "': expected KEY=VALUE");
      fields[word.substr(0, eq)] = word.substr(eq + 1);
      order.push_back(word.substr(0, eq));
    }
    if (fields.empty()) continue;
    const std::string& first = order.front();
    if (first == "BlockSizes") continue;  // not a placement group
    if (first == "SwitchName" && !fields.count("Nodes")) {
      if (fields.count("Switches")) {
        for (const auto& [key, value] : fields) {
          if (key != "SwitchName" && key != "Switches" && key != "LinkSpeed") {
            throw InputError(where + ": '" + key + "': unknown key on a switch above the leaves (SwitchName, Switches, LinkSpeed)");
          }
        }
        if (fields["SwitchName"].empty()) throw InputError(where + ": SwitchName is empty");
        UpperSwitch upper{fields["SwitchName"], where, {}};
        try {  // no more switch names than the cluster has nodes (each leaf switch holds one at least)
          upper.children = expand_hostlist(fields["Switches"], static_cast<std::size_t>(std::max(0, cluster_nodes)));
        } catch (const std::invalid_argument& error) {
          throw InputError(where + ": Switches=" + fields["Switches"] + ": " + error.what());
        }
        uppers.push_back(std::move(upper));
      }
      continue;
    }
    if (first != "SwitchName" && first != "BlockName") {
      throw InputError(where + ": '" + first + "': expected SwitchName=... (topology/tree) or BlockName=... (topology/block)");
    }
    const std::string plugin = first == "SwitchName" ? "tree" : "block";
    if (!t.plugin.empty() && t.plugin != plugin) throw InputError(where + ": mixes SwitchName and BlockName lines (one topology plugin per file)");
    t.plugin = plugin;
    for (const auto& [key, value] : fields) {
      static const std::vector<std::string> known = {"SwitchName", "BlockName", "Nodes", "Switches", "LinkSpeed"};
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        throw InputError(where + ": '" + key + "': unknown key (SwitchName, BlockName, Nodes, Switches, LinkSpeed)");
      }
    }
    if (fields[first].empty()) throw InputError(where + ": " + first + " is empty");
    std::vector<std::string> hosts;
    try {
      // No more names than the cluster has nodes: a larger list is refused before it is built (a fuzzed
      // hostlist expanded to 700 MB of names for a 16-node cluster); duplicates are named below.
      hosts = expand_hostlist(fields["Nodes"], static_cast<std::size_t>(std::max(0, cluster_nodes)));
    } catch (const std::invalid_argument& error) {
      throw InputError(where + ": Nodes=" + fields["Nodes"] + ": " + error.what() + " (the cluster has " + std::to_string(cluster_nodes) + " nodes)");
    }
    const int group = static_cast<int>(t.group_names.size());
    t.group_names.push_back(fields[first]);
    for (const auto& host : hosts) {
      if (index_of.count(host)) {
        throw InputError(where + ": node " + host + " is already in " + t.group_names[t.node_group[index_of[host]]] +
                         " (a node sits under one leaf switch, in one block)");
      }
      index_of[host] = static_cast<int>(t.node_names.size());
      t.node_names.push_back(host);
      t.node_group.push_back(group);
      if (static_cast<int>(t.node_names.size()) > cluster_nodes) {
        throw InputError(where + ": more nodes than the cluster's " + std::to_string(cluster_nodes) + " (" + host + " is the first one over)");
      }
    }
  }
  if (t.node_names.empty()) throw InputError(path.string() + ": no SwitchName=... Nodes=... or BlockName=... Nodes=... line");
  if (t.plugin == "block" && !uppers.empty()) {
    throw InputError(uppers.front().where + ": a SwitchName=... Switches=... line in a topology/block file (one topology plugin per file)");
  }
  set_block_level(t, uppers);
  if (static_cast<int>(t.node_names.size()) != cluster_nodes) {
    throw InputError(path.string() + ": places " + std::to_string(t.node_names.size()) + " nodes but the cluster has " +
                     std::to_string(cluster_nodes) + " (every node under one leaf switch or in one block)");
  }
  return t;
}

}  // namespace fmsim::cluster
