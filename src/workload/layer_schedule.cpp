// Order in which a rank issues the pieces of its layers: one after the other, or a forward layer and
// a backward layer together as Megatron-Core's combined 1F1B does (overlap_moe_expert_parallel_comm).
#include <algorithm>
#include <stdexcept>

#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

/// The pass a piece continues: its last node, and the node before its latest dispatch-role all-to-all.
struct Chain {
  int node;
  int before_dispatch = -1;
};

void emit(const LayerPiece& piece, Chain& chain) {
  if (piece.role == PieceRole::wgrad) {
    // Delayed weight gradients need the experts' backward, not the all-to-all issued after it: they run
    // beside it, and the layer's remaining pieces follow them on the compute stream.
    piece.emit(chain.before_dispatch);
    return;
  }
  if (piece.role == PieceRole::dispatch) chain.before_dispatch = chain.node;
  chain.node = piece.emit(chain.node);
}

}  // namespace

int emit_pieces(const LayerPieces& pieces, int after) {
  Chain chain{after};
  for (const auto& piece : pieces) emit(piece, chain);
  return chain.node;
}

std::pair<int, int> emit_pieces_combined(TraceWriter& w, const LayerPieces& forward, const LayerPieces& backward,
                                         int forward_after, int backward_after) {
  // MLM schedule_layer_1f1b (MR3470): forward attention beside the backward combine all-to-all, the
  // forward dispatch beside the backward experts, the forward experts beside the backward dispatch
  // (then the delayed weight gradients), the forward combine beside the backward attention. Streams run
  // their nodes in issue order, so issuing in this order lets each all-to-all (EP stream) proceed while
  // the compute stream runs the other pass.
  struct Slot {
    bool forward;
    PieceRole role;
  };
  static constexpr Slot kOrder[] = {
      {false, PieceRole::pre},     {true, PieceRole::attention}, {false, PieceRole::combine}, {true, PieceRole::dispatch},
      {false, PieceRole::experts}, {true, PieceRole::experts},   {false, PieceRole::dispatch}, {false, PieceRole::wgrad},
      {true, PieceRole::combine},  {false, PieceRole::attention}, {true, PieceRole::post}};
  // The all-to-all each compute slot runs beside: the other pass's combine (attention) or dispatch
  // (experts, and the delayed weight gradients beside the backward's own dispatch).
  const auto has = [](const LayerPieces& pieces, PieceRole role) {
    return std::any_of(pieces.begin(), pieces.end(), [role](const LayerPiece& piece) { return piece.role == role; });
  };
  const auto beside_all_to_all = [&](const Slot& slot) {
    const LayerPieces& other = slot.forward ? backward : forward;
    switch (slot.role) {
      case PieceRole::attention: return has(other, PieceRole::combine);
      case PieceRole::experts: return has(other, PieceRole::dispatch);
      case PieceRole::wgrad: return has(backward, PieceRole::dispatch);
      default: return false;
    }
  };
  Chain f{forward_after}, b{backward_after};
  std::size_t emitted = 0;
  for (const Slot& slot : kOrder) {
    w.sms_beside_comm = beside_all_to_all(slot) ? w.s.training.moe_dispatcher_sms : 0;
    for (const auto& piece : slot.forward ? forward : backward) {
      if (piece.role != slot.role) continue;
      emit(piece, slot.forward ? f : b);
      ++emitted;
    }
  }
  w.sms_beside_comm = 0;
  if (emitted != forward.size() + backward.size()) throw std::logic_error("combined 1F1B: a layer piece has no slot");
  return {f.node, b.node};
}

}  // namespace fmsim::workload::detail
