// The serving driver: arrivals, the router, each replica's iteration loop, and the prefill-to-decode KV
// moves as engine flows (NIXL-style: the decode replica reserves blocks, then pulls the KV over NVLink
// or EFA; the prefill replica frees its blocks when the move is done).
#include "fmsim/inference/serving_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/engine/flow_driver.hpp"
#include "fmsim/engine/result_bytes.hpp"
#include "replica_scheduler.hpp"

namespace fmsim::inference {
namespace {

enum class EventKind { arrival = 0, iteration_end = 1, wake = 2 };

struct Event {
  double time_s;
  int kind;        ///< EventKind: at equal times arrivals come first, then ends, then wake-ups
  long long order; ///< insertion order, for determinism
  int index;       ///< request or replica
  bool operator>(const Event& other) const {
    if (time_s != other.time_s) return time_s > other.time_s;
    if (kind != other.kind) return kind > other.kind;
    return order > other.order;
  }
};

struct Transfer {
  int seq = 0, prefill_replica = 0, decode_replica = 0;
  int flows_left = 0;
  long long prefill_blocks = 0;
  double start_s = 0, bytes = 0;
};

class ServingSimulation final : public engine::FlowDriver {
 public:
  ServingSimulation(const ServingPlan& plan, const std::vector<Request>& requests, bool timeline)
      : plan_(plan), timeline_(timeline) {
    const auto& scenario = plan.scenario();
    for (std::size_t r = 0; r < plan.replicas().size(); ++r) {
      const int pool = plan.replicas()[r].pool;
      schedulers_.emplace_back(plan.model(pool));
      replicas_.push_back(ReplicaRuntime{});
      outcome_.replicas.push_back(ReplicaStats{});
      outcome_.replicas.back().pool = pool;
      outcome_.replicas.back().kv_blocks = plan.model(pool).memory().kv_blocks;
      (pool == 0 ? entry_replicas_ : decode_replicas_).push_back(static_cast<int>(r));
    }
    if (!scenario.disaggregated()) decode_replicas_.clear();
    seqs_.resize(requests.size());
    outcome_.requests.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Request& request = requests[i];
      check_servable(request);
      SeqState& s = seqs_[i];
      s.request = static_cast<int>(i);
      s.samples = request.samples;
      s.output = request.output_tokens;
      s.target = request.input_tokens;
      s.prefix_group = request.prefix_group;
      s.prefix_tokens = request.prefix_tokens;
      RequestOutcome& o = outcome_.requests[i];
      o.arrival_s = request.arrival_s;
      o.input_tokens = request.input_tokens;
      o.output_tokens = request.output_tokens;
      o.samples = request.samples;
      push(request.arrival_s, EventKind::arrival, static_cast<int>(i));
    }
  }

  double next_event_s() const override {
    return events_.empty() ? std::numeric_limits<double>::infinity() : events_.top().time_s;
  }

  void on_time(double now_s, engine::FlowStarter& network) override {
    network_ = &network;
    while (!events_.empty() && events_.top().time_s <= now_s) {
      const Event event = events_.top();
      events_.pop();
      switch (static_cast<EventKind>(event.kind)) {
        case EventKind::arrival: arrive(event.index, now_s); break;
        case EventKind::iteration_end: end_iteration(event.index, now_s); break;
        case EventKind::wake:
          replicas_[static_cast<std::size_t>(event.index)].wake_pending = false;
          start_iteration(event.index, now_s);
          break;
      }
    }
  }

  void on_flow_done(long long tag, double now_s, engine::FlowStarter& network) override {
    network_ = &network;
    Transfer& transfer = transfers_.at(tag);
    if (--transfer.flows_left > 0) return;
    schedulers_[static_cast<std::size_t>(transfer.prefill_replica)].free_blocks(transfer.prefill_blocks);
    wake(transfer.prefill_replica, now_s);
    // The first token travels with the KV: the user sees it once the decode replica has it.
    RequestOutcome& o = outcome_.requests[static_cast<std::size_t>(transfer.seq)];
    o.first_token_s = now_s;
    o.kv_transfer_s = now_s - transfer.start_s;
    outcome_.transfers.push_back({transfer.seq, transfer.prefill_replica, transfer.decode_replica, transfer.start_s, now_s, transfer.bytes});
    schedulers_[static_cast<std::size_t>(transfer.decode_replica)].join_running(transfer.seq);
    wake(transfer.decode_replica, now_s);
    transfers_.erase(tag);
  }

  /// Hosts (one per GPU of a replica), NVLink and rail links, and routes for the prefill-to-decode pairs.
  engine::SimPlatform kv_platform() {
    engine::SimPlatform platform;
    const auto& spec = plan_.scenario().cluster;
    const auto& cluster = plan_.cluster();
    const double nvlink_Bps = spec.gpu.nvlink_bandwidth_per_direction_Bps * collectives::tuning::kNvlinkCopyEfficiency;
    const double rail_Bps = spec.rail_bandwidth_Bps() * collectives::tuning::kNetworkEfficiency;
    auto host_of = [&](int gpu) {
      auto found = gpu_host_.find(gpu);
      if (found != gpu_host_.end()) return found->second;
      const int host = static_cast<int>(platform.hosts.size());
      platform.hosts.push_back("gpu" + std::to_string(gpu));
      for (const char* kind : {"nvl-up", "nvl-down", "rail-up", "rail-down"}) {
        const bool nvlink = kind[0] == 'n';
        platform.links.push_back({std::string(kind) + "-" + std::to_string(gpu), nvlink ? nvlink_Bps : rail_Bps,
                                  nvlink ? spec.nvlink.message_latency_s : spec.network.message_latency_s / 2});
      }
      gpu_host_[gpu] = host;
      return host;
    };
    for (int p : entry_replicas_) {
      const auto& prefill_gpus = plan_.replicas()[static_cast<std::size_t>(p)].gpus;
      for (int d : decode_replicas_) {
        const auto& decode_gpus = plan_.replicas()[static_cast<std::size_t>(d)].gpus;
        for (std::size_t j = 0; j < prefill_gpus.size(); ++j) {
          const int src = prefill_gpus[j], dst = decode_gpus[j % decode_gpus.size()];
          const int src_host = host_of(src), dst_host = host_of(dst);
          const bool same_domain = cluster.domain_of_node(cluster.node_of_gpu(src)) == cluster.domain_of_node(cluster.node_of_gpu(dst));
          const int up = 4 * src_host + (same_domain ? 0 : 2), down = 4 * dst_host + (same_domain ? 1 : 3);
          platform.routes.push_back({src_host, dst_host, {up, down}});
        }
      }
    }
    return platform;
  }

  ServeOutcome take_outcome() {
    for (const auto& o : outcome_.requests) outcome_.end_s = std::max(outcome_.end_s, o.finish_s);
    for (std::size_t r = 0; r < schedulers_.size(); ++r) {
      outcome_.replicas[r].spec_decode_steps = schedulers_[r].decode_steps();
      outcome_.replicas[r].spec_accepted_tokens = schedulers_[r].accepted_tokens();
      const auto prefix = schedulers_[r].prefix_counters();
      outcome_.replicas[r].prefix_looked_up_tokens = prefix.looked_up_tokens;
      outcome_.replicas[r].prefix_gpu_hit_tokens = prefix.gpu_hit_tokens;
      outcome_.replicas[r].prefix_host_hit_tokens = prefix.host_hit_tokens;
      outcome_.replicas[r].prefix_gpu_evictions = prefix.gpu_evictions;
      outcome_.replicas[r].prefix_host_drops = prefix.host_drops;
    }
    for (std::size_t i = 0; i < seqs_.size(); ++i) {
      outcome_.requests[i].preemptions = seqs_[i].preemptions;
      outcome_.requests[i].cached_tokens = seqs_[i].cached;
    }
    return std::move(outcome_);
  }

 private:
  struct ReplicaRuntime {
    bool busy = false, wake_pending = false;
    int outstanding = 0;               ///< requests routed here and not finished
    double last_change_s = 0;
    std::vector<ScheduledSeq> batch;
    double iteration_start_s = 0;
    std::deque<int> kv_pending;        ///< decode pool: requests waiting for blocks to receive their KV
    std::size_t round_robin = 0;
  };

  void check_servable(const Request& request) const {
    const auto& scenario = plan_.scenario();
    for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
      const ReplicaModel& model = plan_.model(p);
      const auto& engine = model.pool().engine;
      const long long tokens_at_end = request.input_tokens + static_cast<long long>(request.samples) * request.output_tokens;
      const int decode_part = scenario.pools[static_cast<std::size_t>(p)].role == PoolRole::prefill ? 0 : request.output_tokens;
      const long long blocks = kv_blocks_for(request.samples, engine.block_size, request.input_tokens, decode_part,
                                             model.memory().state_blocks_per_sequence);
      if (blocks > model.memory().kv_blocks) {
        const long long state = model.memory().state_blocks_per_sequence * request.samples * engine.block_size;
        throw InputError(scenario.file + ": request " + std::to_string(request.id) + " needs " + std::to_string(tokens_at_end) +
                         " tokens of KV cache" + (state > 0 ? " and its Mamba state (as much as " + std::to_string(state) + " tokens)" : "") +
                         " and a " + to_string(model.pool().role) + " replica holds " +
                         std::to_string(model.memory().kv_capacity_tokens) + "; shorten it or give replicas more memory");
      }
      if (!engine.chunked_prefill && request.input_tokens > engine.max_num_batched_tokens) {
        throw InputError(scenario.file + ": request " + std::to_string(request.id) + " has a " + std::to_string(request.input_tokens) +
                         "-token prompt, more than max_num_batched_tokens (" + std::to_string(engine.max_num_batched_tokens) +
                         ") with chunked prefill off; enable it or raise the limit");
      }
    }
  }

  void push(double time_s, EventKind kind, int index) { events_.push({time_s, static_cast<int>(kind), order_++, index}); }

  /// Changes the count of requests a replica holds, integrating it over time (Little's L).
  void hold(int replica, int delta, double now_s) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
    outcome_.replicas[static_cast<std::size_t>(replica)].request_seconds += r.outstanding * (now_s - r.last_change_s);
    r.last_change_s = now_s;
    r.outstanding += delta;
  }

  void wake(int replica, double now_s) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
    if (r.busy || r.wake_pending) return;
    r.wake_pending = true;
    push(now_s, EventKind::wake, replica);
  }

  /// Picks a replica among `candidates`; `start` is that pool's rotating cursor.
  int route(const std::vector<int>& candidates, std::size_t& start) {
    if (plan_.scenario().router == RouterPolicy::round_robin) return candidates[start++ % candidates.size()];
    // Least outstanding requests; ties go to the next replica after the last choice.
    int best = -1;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const int candidate = candidates[(start + k) % candidates.size()];
      if (best < 0 || replicas_[static_cast<std::size_t>(candidate)].outstanding < replicas_[static_cast<std::size_t>(best)].outstanding) {
        best = candidate;
      }
    }
    ++start;
    return best;
  }

  void arrive(int request, double now_s) {
    const int replica = route(entry_replicas_, entry_cursor_);
    outcome_.requests[static_cast<std::size_t>(request)].replica = replica;
    hold(replica, +1, now_s);
    schedulers_[static_cast<std::size_t>(replica)].waiting().push_back(request);
    wake(replica, now_s);
  }

  /// Decode pool: reserve blocks for requests whose KV waits on a prefill replica, and start moving it.
  void admit_kv(int replica, double now_s) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
    ReplicaScheduler& scheduler = schedulers_[static_cast<std::size_t>(replica)];
    while (!r.kv_pending.empty()) {
      const int seq = r.kv_pending.front();
      SeqState& s = seqs_[static_cast<std::size_t>(seq)];
      const long long prefill_blocks = s.blocks;
      s.blocks = 0;
      if (!scheduler.reserve(s)) {
        s.blocks = prefill_blocks;
        return;
      }
      r.kv_pending.pop_front();
      start_transfer(seq, replica, prefill_blocks, now_s);
    }
  }

  void start_transfer(int seq, int decode_replica, long long prefill_blocks, double now_s) {
    const int prefill_replica = outcome_.requests[static_cast<std::size_t>(seq)].replica;
    const auto& prefill_gpus = plan_.replicas()[static_cast<std::size_t>(prefill_replica)].gpus;
    const auto& decode_gpus = plan_.replicas()[static_cast<std::size_t>(decode_replica)].gpus;
    const SeqState& s = seqs_[static_cast<std::size_t>(seq)];
    // The prompt's KV, and a hybrid model's Mamba state at its end.
    const double bytes = static_cast<double>(s.prefilled) * plan_.model(0).kv_transfer_bytes_per_token() +
                         plan_.model(0).state_transfer_bytes_per_sequence();
    const long long tag = next_transfer_++;
    Transfer transfer{seq, prefill_replica, decode_replica, static_cast<int>(prefill_gpus.size()), prefill_blocks, now_s, bytes};
    transfers_[tag] = transfer;
    // Each prefill GPU sends its shard of every layer it holds to the decode GPU in the same position.
    for (std::size_t j = 0; j < prefill_gpus.size(); ++j) {
      network_->start_flow(tag, gpu_host_.at(prefill_gpus[j]), gpu_host_.at(decode_gpus[j % decode_gpus.size()]),
                           bytes / static_cast<double>(prefill_gpus.size()));
    }
  }

  void start_iteration(int replica, double now_s) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
    if (r.busy) return;
    ReplicaScheduler& scheduler = schedulers_[static_cast<std::size_t>(replica)];
    if (!r.kv_pending.empty()) admit_kv(replica, now_s);
    if (!scheduler.has_work()) return;
    BatchShape shape;
    auto preempted = scheduler.schedule(seqs_, r.batch, shape);
    ReplicaStats& stats = outcome_.replicas[static_cast<std::size_t>(replica)];
    stats.preemptions += static_cast<long long>(preempted.size());
    if (r.batch.empty()) return;  // waiting for blocks that only a transfer in flight will free
    const ReplicaModel& model = plan_.model(plan_.replicas()[static_cast<std::size_t>(replica)].pool);
    const IterationBreakdown parts = model.breakdown(shape);
    const double duration = parts.total_s();
    r.busy = true;
    r.iteration_start_s = now_s;
    ++stats.iterations;
    stats.prefill_tokens += shape.prefill_tokens;
    stats.decode_tokens += shape.decode_tokens;
    stats.busy_s += duration;
    stats.time_parts.accumulate(parts);
    const long long used = scheduler.used_blocks();
    stats.kv_block_seconds += static_cast<double>(used) * duration;
    stats.peak_kv_blocks = std::max(stats.peak_kv_blocks, used);
    if (timeline_) {
      outcome_.iterations.push_back({replica, now_s, now_s + duration, shape.prefill_tokens, shape.decode_tokens,
                                     static_cast<int>(r.batch.size()),
                                     static_cast<double>(used) / static_cast<double>(scheduler.total_blocks())});
    }
    push(now_s + duration, EventKind::iteration_end, replica);
  }

  void end_iteration(int replica, double now_s) {
    ReplicaRuntime& r = replicas_[static_cast<std::size_t>(replica)];
    ReplicaScheduler& scheduler = schedulers_[static_cast<std::size_t>(replica)];
    const bool handoff = !decode_replicas_.empty() && plan_.replicas()[static_cast<std::size_t>(replica)].pool == 0;
    first_tokens_.clear();
    finished_.clear();
    handed_off_.clear();
    scheduler.complete(seqs_, r.batch, handoff, first_tokens_, finished_, handed_off_);
    r.busy = false;
    for (int seq : first_tokens_) {
      if (!handoff || seqs_[static_cast<std::size_t>(seq)].generated >= seqs_[static_cast<std::size_t>(seq)].output) {
        outcome_.requests[static_cast<std::size_t>(seq)].first_token_s = now_s;
      }
    }
    for (int seq : finished_) {
      RequestOutcome& o = outcome_.requests[static_cast<std::size_t>(seq)];
      o.finish_s = now_s;
      const int holder = o.decode_replica >= 0 ? o.decode_replica : o.replica;
      hold(holder, -1, now_s);
      if (holder != replica) throw InternalError("inference: a request finished on a replica that does not hold it");
    }
    for (int seq : handed_off_) {
      RequestOutcome& o = outcome_.requests[static_cast<std::size_t>(seq)];
      hold(replica, -1, now_s);
      const int decode = route(decode_replicas_, decode_cursor_);
      o.decode_replica = decode;
      hold(decode, +1, now_s);
      replicas_[static_cast<std::size_t>(decode)].kv_pending.push_back(seq);
      wake(decode, now_s);
    }
    start_iteration(replica, now_s);
  }

  const ServingPlan& plan_;
  bool timeline_ = false;
  std::vector<ReplicaScheduler> schedulers_;
  std::vector<ReplicaRuntime> replicas_;
  std::vector<int> entry_replicas_, decode_replicas_;
  std::size_t entry_cursor_ = 0, decode_cursor_ = 0;
  std::vector<SeqState> seqs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  long long order_ = 0;
  std::map<long long, Transfer> transfers_;
  long long next_transfer_ = 0;
  std::map<int, int> gpu_host_;
  engine::FlowStarter* network_ = nullptr;
  std::vector<int> first_tokens_, finished_, handed_off_;
  ServeOutcome outcome_;
};

// The outcome crosses the fork pipe as plain structs (engine/result_bytes.hpp).

std::string serialize(const ServeOutcome& o) {
  std::string out;
  engine::append_values(out, std::vector<double>{o.end_s, static_cast<double>(o.network_flows), o.network_bytes});
  engine::append_values(out, o.requests);
  engine::append_values(out, o.replicas);
  engine::append_values(out, o.iterations);
  engine::append_values(out, o.transfers);
  return out;
}

ServeOutcome deserialize(const std::string& in) {
  std::size_t offset = 0;
  ServeOutcome o;
  auto header = engine::take_values<double>(in, offset);
  o.end_s = header.at(0);
  o.network_flows = static_cast<long long>(header.at(1));
  o.network_bytes = header.at(2);
  o.requests = engine::take_values<RequestOutcome>(in, offset);
  o.replicas = engine::take_values<ReplicaStats>(in, offset);
  o.iterations = engine::take_values<IterationRecord>(in, offset);
  o.transfers = engine::take_values<TransferRecord>(in, offset);
  return o;
}

}  // namespace

ServeOutcome simulate_serving(const ServingPlan& plan, const std::vector<Request>& requests, bool record_timeline) {
  if (!plan.scenario().disaggregated()) {
    ServingSimulation simulation(plan, requests, record_timeline);
    engine::run_driver_without_network(simulation);
    return simulation.take_outcome();
  }
  return deserialize(engine::run_isolated([&] {
    ServingSimulation simulation(plan, requests, record_timeline);
    const engine::SimPlatform platform = simulation.kv_platform();
    const engine::FlowRunStats stats = engine::run_flow_driver(platform, simulation);
    ServeOutcome outcome = simulation.take_outcome();
    outcome.network_flows = stats.flows;
    outcome.network_bytes = stats.bytes;
    return serialize(outcome);
  }));
}

}  // namespace fmsim::inference
