#include "graph/graph.h"

#include <sstream>

#include "graph/ops.h"

namespace sc {

const char* tensor_kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::kInput: return "input";
    case TensorKind::kWeight: return "weight";
    case TensorKind::kActivation: return "act";
    case TensorKind::kMask: return "mask";
    case TensorKind::kGradient: return "grad";
    case TensorKind::kWeightGrad: return "wgrad";
    case TensorKind::kCache: return "cache";
  }
  return "?";
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kMatmul: return "matmul";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kNorm: return "norm";
    case OpKind::kSoftmax: return "softmax";
    case OpKind::kDropout: return "dropout";
    case OpKind::kEmbedding: return "embedding";
    case OpKind::kReduce: return "reduce";
    case OpKind::kLoss: return "loss";
    case OpKind::kAttention: return "flash_attention";
    case OpKind::kView: return "view";
    case OpKind::kCollective: return "collective";
    case OpKind::kOptimizer: return "optimizer";
    case OpKind::kSend: return "send";
    case OpKind::kRecv: return "recv";
    case OpKind::kRemesh: return "remesh";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kForward: return "fwd";
    case Phase::kBackward: return "bwd";
    case Phase::kOptimizer: return "opt";
  }
  return "?";
}

const char* cause_kind_name(CauseKind k) {
  switch (k) {
    case CauseKind::kNone: return "none";
    case CauseKind::kPartialSum: return "partial_sum";
    case CauseKind::kGather: return "gather";
    case CauseKind::kRedistribute: return "redistribute";
    case CauseKind::kSlice: return "slice";
    case CauseKind::kMoeDispatch: return "moe_dispatch";
    case CauseKind::kMoeCombine: return "moe_combine";
    case CauseKind::kGradBucket: return "grad_bucket";
    case CauseKind::kExpertGradBucket: return "expert_grad_bucket";
    case CauseKind::kWeightSync: return "weight_sync";
    case CauseKind::kZeroGradShard: return "zero_grad_shard";
    case CauseKind::kZeroParamGatherAfterStep: return "zero_param_gather_after_step";
    case CauseKind::kZeroParamGather: return "zero_param_gather";
    case CauseKind::kHsdpReplicaReduce: return "hsdp_replica_reduce";
  }
  return "?";
}

Expr Tensor::global_numel() const {
  Expr n = 1;
  for (const auto& d : dims) n *= d.size;
  return n;
}

Expr Tensor::local_numel() const {
  Expr n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    Expr d = dims[i].size;
    if (i < sharding.dim_axis.size() && !sharding.dim_axis[i].empty())
      d = d / Expr::sym(sharding.dim_axis[i]);
    n *= d;
  }
  return n;
}

Result<int64_t> Tensor::local_bytes(const Bindings& b, const std::string& what) const {
  if (!dtype_is_4bit(dtype)) return (local_numel() * Expr(dtype_bytes(dtype))).eval(b, what);
  SC_ASSIGN_OR_RETURN(int64_t n, local_numel().eval(b, what));
  return dtype_storage_bytes(dtype, n);
}

Tensor make_tensor(std::string name, std::vector<Dim> dims, DType dt, TensorKind kind) {
  Tensor t;
  t.name = std::move(name);
  t.dims = std::move(dims);
  t.dtype = dt;
  t.kind = kind;
  return t;
}

int Graph::add_tensor(Tensor t) {
  t.id = static_cast<int>(tensors.size());
  if (t.sharding.dim_axis.size() != t.dims.size()) t.sharding.dim_axis.assign(t.dims.size(), "");
  tensors.push_back(std::move(t));
  return tensors.back().id;
}

int Graph::add_op(Op op) {
  op.id = static_cast<int>(ops.size());
  for (int o : op.outputs) tensors[o].producer = op.id;
  ops.push_back(std::move(op));
  order.push_back(ops.back().id);
  return ops.back().id;
}

std::vector<std::string> Graph::labels_in(const Op& op, size_t i) const {
  if (i < op.in_labels.size() && !op.in_labels[i].empty()) return op.in_labels[i];
  std::vector<std::string> labels;
  for (const auto& d : tensors[op.inputs[i]].dims) labels.push_back(d.label);
  return labels;
}

std::vector<std::string> Graph::labels_out(const Op& op, size_t i) const {
  if (i < op.out_labels.size() && !op.out_labels[i].empty()) return op.out_labels[i];
  std::vector<std::string> labels;
  for (const auto& d : tensors[op.outputs[i]].dims) labels.push_back(d.label);
  return labels;
}

bool is_saved_activation(const Graph& g, int tensor) {
  const Tensor& x = g.tensors[tensor];
  return x.producer >= 0 && g.ops[x.producer].phase == Phase::kForward &&
         (x.kind == TensorKind::kActivation || x.kind == TensorKind::kMask);
}

std::vector<int> saved_storage(const Graph& g) {
  std::vector<int> rep(g.tensors.size());
  for (size_t t = 0; t < rep.size(); ++t) rep[t] = static_cast<int>(t);
  std::vector<char> saved(g.tensors.size(), 0);
  for (const Op& o : g.ops)
    if (o.phase == Phase::kBackward)
      for (int t : o.inputs)
        if (is_saved_activation(g, t)) saved[static_cast<size_t>(t)] = 1;
  for (size_t t = 0; t < rep.size(); ++t) {
    if (!saved[t]) continue;
    int cur = static_cast<int>(t);
    for (;;) {
      const int prod = g.tensors[static_cast<size_t>(cur)].producer;
      if (prod < 0) break;
      const Op& v = g.ops[static_cast<size_t>(prod)];
      if (v.kind != OpKind::kView || v.phase != Phase::kForward || v.inputs.size() != 1) break;
      cur = v.inputs[0];
      if (saved[static_cast<size_t>(cur)]) rep[t] = cur;
    }
  }
  return rep;
}

int add_collective_op(Graph& g, std::string name, CollectiveType coll, std::string axis, Phase phase,
                      std::vector<int> inputs, std::vector<int> outputs) {
  Op o;
  o.name = std::move(name);
  o.kind = OpKind::kCollective;
  o.def = &ops::kCollective;
  o.fn = collective_name(coll);
  o.phase = phase;
  o.coll = coll;
  o.axis = std::move(axis);
  o.linear = true;
  o.inputs = std::move(inputs);
  o.outputs = std::move(outputs);
  o.id = static_cast<int>(g.ops.size());
  for (int t : o.outputs) g.tensors[t].producer = o.id;
  g.ops.push_back(std::move(o));
  return g.ops.back().id;
}

std::string local_shape_string(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    Expr d = t.dims[i].size;
    if (!t.sharding.dim_axis[i].empty()) d = d / Expr::sym(t.sharding.dim_axis[i]);
    s += (i ? ", " : "") + d.to_string();
  }
  return s + "]";
}

std::string sharding_to_string(const Tensor& t) {
  std::string s;
  for (size_t i = 0; i < t.dims.size(); ++i)
    if (!t.sharding.dim_axis[i].empty())
      s += (s.empty() ? "" : ", ") + t.dims[i].label + ":" + t.sharding.dim_axis[i];
  s = "{" + s + "}";
  if (!t.sharding.partial.empty()) {
    s += " partial(";
    for (size_t i = 0; i < t.sharding.partial.size(); ++i)
      s += (i ? "," : "") + t.sharding.partial[i];
    s += ")";
  }
  return s;
}

namespace {
std::string tensor_ref(const Tensor& t) {
  return "%" + std::to_string(t.id) + " " + t.name + ":" + dtype_name(t.dtype) +
         local_shape_string(t) + sharding_to_string(t);
}
}  // namespace

std::string graph_to_named_text(const Graph& g, const std::string& header) {
  std::vector<std::string> name(g.tensors.size());
  std::map<std::string, int> seen;
  for (const auto& t : g.tensors) {
    const int n = ++seen[t.name];
    name[t.id] = n == 1 ? t.name : t.name + "#" + std::to_string(n);
  }
  auto ref = [&](const Tensor& t) {
    return name[t.id] + ":" + dtype_name(t.dtype) + local_shape_string(t) + sharding_to_string(t);
  };
  std::ostringstream out;
  out << header << "\n";
  for (const auto& t : g.tensors)
    if (t.producer < 0 && (t.kind == TensorKind::kWeight || t.kind == TensorKind::kInput || t.kind == TensorKind::kCache))
      out << tensor_kind_name(t.kind) << " " << ref(t) << "\n";
  for (int id : g.order) {
    const Op& op = g.ops[id];
    out << phase_name(op.phase) << " " << op.name << " " << op_def(op).name;
    if (op.kind == OpKind::kCollective)
      out << "(" << collective_name(op.coll) << " over " << op.axis << ")";
    if (op.cause.kind != CauseKind::kNone)
      out << " cause=" << cause_kind_name(op.cause.kind) << "/" << op.cause.feature;
    out << " (";
    for (size_t i = 0; i < op.inputs.size(); ++i) out << (i ? ", " : "") << name[op.inputs[i]];
    out << ") -> (";
    for (size_t i = 0; i < op.outputs.size(); ++i) out << (i ? ", " : "") << ref(g.tensors[op.outputs[i]]);
    out << ")";
    if (!op.local_flops.is_zero()) out << " flops=" << op.local_flops.to_string();
    else if (!op.flops.is_zero()) out << " global_flops=" << op.flops.to_string();
    out << "\n";
  }
  return out.str();
}

std::string graph_to_text(const Graph& g, const std::string& header) {
  std::ostringstream out;
  out << header << "\n";
  for (const auto& t : g.tensors)
    if (t.producer < 0 && (t.kind == TensorKind::kWeight || t.kind == TensorKind::kInput || t.kind == TensorKind::kCache))
      out << tensor_kind_name(t.kind) << " " << tensor_ref(t) << "\n";
  for (int id : g.order) {
    const Op& op = g.ops[id];
    out << phase_name(op.phase) << " " << op.name << " " << op_kind_name(op.kind);
    if (op.kind == OpKind::kCollective)
      out << "(" << collective_name(op.coll) << " over " << op.axis << ")";
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv)
      out << "(boundary " << op.boundary << ")";
    out << " (";
    for (size_t i = 0; i < op.inputs.size(); ++i) out << (i ? ", " : "") << "%" << op.inputs[i];
    out << ") -> (";
    for (size_t i = 0; i < op.outputs.size(); ++i)
      out << (i ? ", " : "") << tensor_ref(g.tensors[op.outputs[i]]);
    out << ")";
    if (!op.local_flops.is_zero()) out << " flops=" << op.local_flops.to_string();
    out << "\n";
  }
  return out.str();
}

}  // namespace sc
