#include <doctest/doctest.h>

#include "symbolic/expr.h"

using sc::Expr;

TEST_CASE("expr: canonical form sorts symbols and merges like terms") {
  Expr b = Expr::sym("b"), s = Expr::sym("s"), h = Expr::sym("h"), tp = Expr::sym("tp");
  CHECK((s * b * h / tp).to_string() == "b*h*s/tp");
  CHECK((h * s * b / tp) == (b * s * h / tp));
  CHECK((b * s + s * b).to_string() == "2*b*s");
  CHECK((b * s - s * b).is_zero());
  CHECK((Expr(2) * s * s * b).to_string() == "2*b*s^2");
  CHECK((b * tp / tp).to_string() == "b");
  CHECK((Expr(3) * h / Expr(2)).to_string() == "3*h/2");
  CHECK((b + Expr(1)).to_string() == "1 + b");
  CHECK(Expr().to_string() == "0");
}

TEST_CASE("expr: exact evaluation and divisibility errors") {
  Expr s = Expr::sym("s"), tp = Expr::sym("tp");
  sc::Bindings ok{{"s", 2048}, {"tp", 8}};
  auto v = (s / tp).eval(ok);
  REQUIRE(v.ok());
  CHECK(v.value() == 256);
  auto bad = (s / tp).eval({{"s", 2048}, {"tp", 3}}, "sequence shard");
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == sc::ErrorCode::kNotDivisible);
  CHECK(bad.error().message.find("s=2048") != std::string::npos);
  CHECK(bad.error().message.find("tp=3") != std::string::npos);
  // Sums of non-integer terms that add up to an integer are fine.
  auto half = (s / Expr(2) + s / Expr(2)).eval({{"s", 3}});
  REQUIRE(half.ok());
  CHECK(half.value() == 3);
}

TEST_CASE("expr: unbound symbols and overflow are errors, not crashes") {
  Expr x = Expr::sym("x");
  CHECK(!x.eval({}).ok());
  Expr big = x * x * x * x;
  auto r = big.eval({{"x", 1000000}});
  REQUIRE(!r.ok());
  CHECK(r.error().message.find("overflow") != std::string::npos);
  auto d = big.eval_double({{"x", 1000000}});
  REQUIRE(d.ok());
  CHECK(d.value() == doctest::Approx(1e24));
}
