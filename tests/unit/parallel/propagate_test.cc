// Sharding propagation on hand-built graphs: the collective is chosen by
// the sharding mismatch, not by the op kind.
#include <doctest/doctest.h>

#include "graph/graph.h"
#include "parallel/propagate.h"

using namespace sc;

namespace {

Dim D(const char* label) { return {label, Expr::sym(label)}; }

int weight(Graph& g, const char* name, std::vector<Dim> dims, int tp_dim) {
  Tensor t = make_tensor(name, std::move(dims), DType::kBF16, TensorKind::kWeight);
  t.sharding_fixed = true;
  int id = g.add_tensor(std::move(t));
  if (tp_dim >= 0) g.tensors[id].sharding.dim_axis[tp_dim] = "tp";
  return id;
}

int act(Graph& g, const char* name, std::vector<Dim> dims) {
  return g.add_tensor(make_tensor(name, std::move(dims), DType::kBF16, TensorKind::kActivation));
}

Op make_op(const char* name, OpKind k, std::vector<int> in, std::vector<int> out) {
  Op o;
  o.name = name;
  o.kind = k;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.flops = Expr(1);
  return o;
}

// x[b,s,h] -> (column) W1[h,f]/tp -> y[b,s,f] -> (row) W2[f,h]/tp -> z[b,s,h] -> norm
struct Mlp {
  Graph g;
  int x, w1, y, w2, z, out;
  explicit Mlp(bool x_seq_sharded) {
    Tensor xt = make_tensor("x", {D("b"), D("s"), D("h")}, DType::kBF16, TensorKind::kInput);
    x = g.add_tensor(std::move(xt));
    if (x_seq_sharded) g.tensors[x].sharding.dim_axis[1] = "tp";
    w1 = weight(g, "w1", {D("h"), D("f")}, 1);
    y = act(g, "y", {D("b"), D("s"), D("f")});
    w2 = weight(g, "w2", {D("f"), D("h")}, 0);
    z = act(g, "z", {D("b"), D("s"), D("h")});
    out = act(g, "out", {D("b"), D("s"), D("h")});
    g.add_op(make_op("fc1", OpKind::kMatmul, {x, w1}, {y}));
    g.add_op(make_op("fc2", OpKind::kMatmul, {y, w2}, {z}));
    Op n = make_op("norm", OpKind::kNorm, {z}, {out});
    n.unshardable = {"h"};
    n.sp_region = true;
    g.add_op(std::move(n));
  }
  std::vector<std::pair<CollectiveType, std::string>> collectives() const {
    std::vector<std::pair<CollectiveType, std::string>> v;
    for (int id : g.order)
      if (g.ops[id].kind == OpKind::kCollective) v.push_back({g.ops[id].coll, g.ops[id].name});
    return v;
  }
};

}  // namespace

TEST_CASE("propagate: column then row parallel without SP gives one all-reduce") {
  Mlp m(false);
  propagate_shardings(m.g, {false, {"tp"}});
  CHECK(local_shape_string(m.g.tensors[m.y]) == "[b, s, f/tp]");
  CHECK(m.g.tensors[m.z].sharding.partial == std::vector<std::string>{"tp"});
  auto c = m.collectives();
  REQUIRE(c.size() == 1);
  CHECK(c[0].first == CollectiveType::kAllReduce);
  CHECK(local_shape_string(m.g.tensors[m.out]) == "[b, s, h]");
  // fc1's work is split over tp: local FLOPs = global / tp.
  CHECK(m.g.ops[0].local_flops.to_string() == "1/tp");
}

TEST_CASE("propagate: with SP, a sequence-sharded input is gathered and the partial sum reduce-scattered") {
  Mlp m(true);
  propagate_shardings(m.g, {true, {"tp"}});
  auto c = m.collectives();
  REQUIRE(c.size() == 2);
  CHECK(c[0].first == CollectiveType::kAllGather);      // s:tp refused by fc1 (tp holds f)
  CHECK(c[1].first == CollectiveType::kReduceScatter);  // norm (SP region) takes s on tp
  CHECK(local_shape_string(m.g.tensors[m.out]) == "[b, s/tp, h]");
}

TEST_CASE("propagate: a reshard is memoised per tensor and target") {
  Mlp m(false);
  // A second reader of z needing it whole reuses the same all-reduce.
  int out2 = act(m.g, "out2", {D("b"), D("s"), D("h")});
  Op n = make_op("norm2", OpKind::kNorm, {m.z}, {out2});
  n.unshardable = {"h"};
  m.g.add_op(std::move(n));
  propagate_shardings(m.g, {false, {"tp"}});
  CHECK(m.collectives().size() == 1);
}

TEST_CASE("propagate: moving a shard between dims is an all-to-all") {
  Graph g;
  Tensor xt = make_tensor("x", {D("s"), D("h")}, DType::kBF16, TensorKind::kInput);
  int x = g.add_tensor(std::move(xt));
  g.tensors[x].sharding.dim_axis[0] = "tp";  // s on tp
  int w = weight(g, "w", {D("h"), D("f")}, 0);  // h on tp: the input must have h on tp
  int y = act(g, "y", {D("s"), D("f")});
  g.add_op(make_op("mm", OpKind::kMatmul, {x, w}, {y}));
  propagate_shardings(g, {false, {"tp"}});
  bool a2a = false;
  for (const auto& o : g.ops) a2a |= o.kind == OpKind::kCollective && o.coll == CollectiveType::kAllToAll;
  CHECK(a2a);
  CHECK(g.tensors[y].sharding.partial == std::vector<std::string>{"tp"});
}
