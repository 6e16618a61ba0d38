#include <doctest/doctest.h>

#include <set>

#include "graph/autodiff.h"
#include "graph/graph.h"

using namespace sc;

TEST_CASE("autodiff: a weight matmul gets separate activation- and weight-gradient GEMMs") {
  Graph g;
  Dim b{"b", Expr::sym("b")}, h{"h", Expr::sym("h")}, f{"f", Expr::sym("f")};
  int x0 = g.add_tensor(make_tensor("x0", {b, h}, DType::kBF16, TensorKind::kInput));
  int w0 = g.add_tensor(make_tensor("w0", {h, h}, DType::kBF16, TensorKind::kWeight));
  int x = g.add_tensor(make_tensor("x", {b, h}, DType::kBF16, TensorKind::kActivation));
  int w = g.add_tensor(make_tensor("w", {h, f}, DType::kBF16, TensorKind::kWeight));
  int y = g.add_tensor(make_tensor("y", {b, f}, DType::kBF16, TensorKind::kActivation));
  auto matmul = [&](const char* name, int in, int weight, int out, Expr n) {
    Op o;
    o.name = name;
    o.kind = OpKind::kMatmul;
    o.inputs = {in, weight};
    o.outputs = {out};
    o.flops = Expr(2) * Expr::sym("b") * Expr::sym("h") * n;
    o.model_flops = o.flops;
    g.add_op(o);
    return o;
  };
  Op a = matmul("mm0", x0, w0, x, Expr::sym("h"));
  Op m = matmul("mm", x, w, y, Expr::sym("f"));
  append_backward_and_optimizer(g, {});
  std::set<std::string> names;
  Expr bwd_flops;
  for (int id : g.order) {
    const Op& o = g.ops[id];
    names.insert(o.name);
    if (o.phase == Phase::kBackward) bwd_flops += o.model_flops;
  }
  CHECK(names.count("mm.dgrad"));
  CHECK(names.count("mm.wgrad"));
  CHECK(names.count("mm0.wgrad"));
  CHECK(!names.count("mm0.dgrad"));  // x0 is an input: no gradient wanted
  CHECK(names.count("optimizer.w"));
  CHECK(names.count("optimizer.w0"));
  // Backward does twice the forward GEMM work, minus the unneeded dgrad.
  CHECK(bwd_flops == Expr(2) * m.flops + a.flops);
  // The weight gradient is an fp32 main grad with the weight's sharding.
  for (const auto& t : g.tensors)
    if (t.kind == TensorKind::kWeightGrad && t.grad_of == w) {
      CHECK(t.dtype == DType::kFP32);
      CHECK(t.sharding_fixed);
    }
  // The wgrad GEMM reads the forward input x: x is saved for backward.
  bool x_saved = false;
  for (int id : g.order)
    if (g.ops[id].name == "mm.wgrad")
      for (int in : g.ops[id].inputs) x_saved |= in == x;
  CHECK(x_saved);
}
