#include "cost/fp8_cost.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace sc {
namespace {

// Linears Megatron-Core leaves in BF16 under FP8: the output layer, the
// router and the shared-expert gate (plain torch linears, not TE modules).
bool bf16_linear(const std::string& name) {
  for (const char* n : {"output.logits", "moe.router", "moe.shared_gate"})
    if (name.find(n) != std::string::npos) return true;
  return false;
}

// The GEMM's second operand is a weight: the parameter itself, or under
// ZeRO-3 / FSDP its copy all-gathered before use (the layer's weights are
// gathered in BF16 and TE quantizes the gathered weight as it would the
// parameter).
bool weight_operand(const Graph& g, int t) {
  if (g.tensors[t].kind == TensorKind::kWeight) return true;
  const int p = g.tensors[t].producer;
  return p >= 0 && g.ops[p].kind == OpKind::kCollective && g.ops[p].coll == CollectiveType::kAllGather &&
         g.ops[p].cause.kind == CauseKind::kZeroParamGather;
}

bool fp8_linear_forward(const Graph& g, const Op& f) {
  if (f.kind != OpKind::kMatmul || f.inputs.size() < 2) return false;
  if (!weight_operand(g, f.inputs[1])) return false;
  return !bf16_linear(f.name);
}

// Scale bytes of one quantized copy of n elements (one direction).
double scale_bytes(Fp8Recipe r, int64_t n, bool weight) {
  const double x = static_cast<double>(n);
  switch (r) {
    case Fp8Recipe::kBlockwise: return 4.0 * std::ceil(x / (weight ? 128.0 * 128.0 : 128.0));
    case Fp8Recipe::kMxfp8: return std::ceil(x / 32.0);
    default: return 0;  // one FP32 scale per tensor
  }
}

}  // namespace

bool fp8_gemm(const Graph& g, const Op& op) {
  if (op.kind != OpKind::kMatmul) return false;
  if (op.fwd_op >= 0) return fp8_linear_forward(g, g.ops[op.fwd_op]);
  return fp8_linear_forward(g, op);
}

Fp8GemmRole fp8_gemm_role(const Op& op) {
  if (op.fwd_op < 0) return Fp8GemmRole::kFprop;  // forward or its recomputed clone
  return op.wgrad ? Fp8GemmRole::kWgrad : Fp8GemmRole::kDgrad;
}

bool fp8_rowwise_gather(Fp8Recipe r) { return r == Fp8Recipe::kDelayed || r == Fp8Recipe::kTensorwise; }

std::vector<Fp8Kernel> fp8_kernels(Fp8Recipe r, Fp8GemmRole role, const Fp8Operands& x) {
  std::vector<Fp8Kernel> out;
  if (r == Fp8Recipe::kNone) return out;
  const bool rowwise_gather = x.gathered && fp8_rowwise_gather(r);
  if (role == Fp8GemmRole::kWgrad) {
    // The column-wise copies of gathered operands, made after the gather.
    if (fp8_rowwise_gather(r) && x.wgrad_gathered > 0)
      out.push_back({"fp8.transpose.gathered", 2 * static_cast<double>(x.wgrad_gathered), 1});
    return out;
  }
  const bool fprop = role == Fp8GemmRole::kFprop;
  const std::string what = fprop ? "input" : "grad_output";
  const double n = static_cast<double>(x.elems);
  if (r == Fp8Recipe::kTensorwise) out.push_back({"fp8.amax." + what, 2 * n, 1});
  if (r == Fp8Recipe::kDelayed && fprop && x.from_norm) {
    // The norm wrote the row-wise FP8 copy; the column-wise one is the
    // transpose (after the gather, on the wgrad GEMM, when gathered).
    if (!rowwise_gather) out.push_back({"fp8.transpose." + what, 2 * n, 1});
  } else if (rowwise_gather) {
    out.push_back({"fp8.cast." + what, 3 * n, 1});  // row-wise only: read 2 B, write 1 B
  } else {
    out.push_back({"fp8.quantize." + what, 4 * n + 2 * scale_bytes(r, x.elems, false), 1});
  }
  if (fprop && x.weight_elems > 0) {
    const double mb = static_cast<double>(std::max<int64_t>(1, x.micro_batches));
    const double w = static_cast<double>(x.weight_elems);
    if (r == Fp8Recipe::kTensorwise) out.push_back({"fp8.amax.weight", 2 * w / mb, 1 / mb});
    out.push_back({"fp8.quantize.weight", (4 * w + 2 * scale_bytes(r, x.weight_elems, true)) / mb, 1 / mb});
  }
  return out;
}

double fp8_kernels_micros(const HardwareProfile& hw, const std::vector<Fp8Kernel>& k) {
  const double hbm = hw.mem_bandwidth * hw.hbm_efficiency * hw.memory_efficiency;
  double us = 0;
  for (const Fp8Kernel& x : k) {
    const double t = hbm > 0 ? x.bytes / hbm * 1e6 : 0;
    us += std::max(t, hw.kernel_floor_micros * x.launches);
  }
  return us;
}

int64_t fp8_weight_copy_bytes(Fp8Recipe r, int64_t n) {
  if (r == Fp8Recipe::kNone) return 0;
  return 2 * n + 2 * static_cast<int64_t>(scale_bytes(r, n, true));
}

namespace {
// Calls fn(weight tensor, its local elements) once per weight an FP8 GEMM
// reads (forward ops, not recomputed copies): the one walk the weight
// copies and the weight counts share.
template <typename Fn>
Status for_each_fp8_weight(const Graph& g, const Bindings& bind, Fn&& fn) {
  std::set<int> seen;
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.fwd_op >= 0 || o.recomputed || !fp8_gemm(g, o) || !seen.insert(o.inputs[1]).second) continue;
    const Tensor& w = g.tensors[o.inputs[1]];
    SC_ASSIGN_OR_RETURN(int64_t n, w.local_numel().eval(bind, w.name));
    fn(w, n);
  }
  return ok_status();
}
}  // namespace

Result<int64_t> fp8_weight_copies_bytes(const Graph& g, const Bindings& bind, Fp8Recipe r, int64_t zero,
                                        int64_t shard_group, int64_t expert_group) {
  if (r == Fp8Recipe::kNone) return int64_t{0};
  int64_t total = 0;
  SC_RETURN_IF_ERROR(for_each_fp8_weight(g, bind, [&](const Tensor& w, int64_t n) {
    int64_t b = fp8_weight_copy_bytes(r, n);
    if (zero >= 3) {
      const int64_t grp = w.expert ? expert_group : shard_group;
      b = (b + grp - 1) / grp;
    }
    total += b;
  }));
  return total;
}

Result<Fp8WeightElems> fp8_weight_elems(const Graph& g, const Bindings& bind, Fp8Recipe r) {
  Fp8WeightElems e;
  if (r == Fp8Recipe::kNone) return e;
  SC_RETURN_IF_ERROR(for_each_fp8_weight(g, bind, [&](const Tensor& w, int64_t n) { (w.expert ? e.expert : e.dense) += n; }));
  return e;
}

std::vector<char> fp8_copy_readers(const Graph& g, Fp8Recipe r) {
  std::vector<char> out(g.ops.size(), 0);
  if (r == Fp8Recipe::kNone) return out;
  std::vector<std::vector<int>> readers(g.tensors.size());
  for (int id : g.order)
    for (int t : g.ops[id].inputs) readers[static_cast<size_t>(t)].push_back(id);
  // An FP8 weight-gradient GEMM, or a backward view / tensor-parallel
  // all-gather every reader of which (through further views) is one.
  const auto copy_only = [&](int op) {
    std::vector<int> todo = {op};
    bool any = false;
    while (!todo.empty()) {
      const Op& x = g.ops[static_cast<size_t>(todo.back())];
      todo.pop_back();
      if (x.kind == OpKind::kMatmul) {
        if (!fp8_gemm(g, x) || fp8_gemm_role(x) != Fp8GemmRole::kWgrad) return false;
        any = true;
        continue;
      }
      const bool pass = x.kind == OpKind::kView ||
                        (x.kind == OpKind::kCollective && x.coll == CollectiveType::kAllGather && x.axis == "tp");
      if (!pass || x.phase != Phase::kBackward) return false;
      for (int o : x.outputs)
        for (int rd : readers[static_cast<size_t>(o)]) todo.push_back(rd);
    }
    return any;
  };
  for (int id : g.order)
    if (g.ops[id].phase == Phase::kBackward) out[static_cast<size_t>(id)] = copy_only(id) ? 1 : 0;
  return out;
}

std::vector<SavedForm> fp8_saved_forms(const Graph& g, Fp8Recipe r, const std::vector<int>& storage,
                                       const std::vector<char>& copy) {
  std::vector<SavedForm> forms(g.tensors.size());
  if (r == Fp8Recipe::kNone) return forms;
  std::vector<char> seen(g.tensors.size(), 0);
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kBackward) continue;
    for (int t : o.inputs) {
      if (!is_saved_activation(g, t)) continue;
      const size_t b = static_cast<size_t>(storage[static_cast<size_t>(t)]);
      if (!seen[b]) forms[b] = {false, false}, seen[b] = 1;
      if (copy[static_cast<size_t>(id)]) forms[b].fp8 = true;
      else forms[b].high = true;
    }
  }
  // Read both ways: the copy too under delayed scaling only (save_original_input).
  if (r != Fp8Recipe::kDelayed)
    for (SavedForm& f : forms)
      if (f.high) f.fp8 = false;
  return forms;
}

Result<int64_t> saved_buffer_bytes(const Graph& g, const Bindings& bind, int t, SavedForm f, Fp8Recipe r) {
  const Tensor& x = g.tensors[static_cast<size_t>(t)];
  int64_t total = 0;
  if (f.high) {
    SC_ASSIGN_OR_RETURN(total, x.local_bytes(bind, x.name + " bytes"));
  }
  if (f.fp8 && r != Fp8Recipe::kNone) {
    SC_ASSIGN_OR_RETURN(int64_t n, x.local_numel().eval(bind, x.name + " elements"));
    total += n + static_cast<int64_t>(scale_bytes(r, n, false));
  }
  return total;
}

}  // namespace sc
