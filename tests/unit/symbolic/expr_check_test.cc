// Division's precondition (a monomial divisor) holds in every build: under
// NDEBUG the assert was gone, a sum divided by its first term only and a
// zero divisor read front() of an empty vector.
#include <doctest/doctest.h>

#include "../base/death.h"
#include "symbolic/expr.h"

using sc::Expr;
using sc::testing::run_in_child;

TEST_CASE("expr: dividing by a non-monomial or by zero stops with the divisor") {
  auto sum = run_in_child([] { (void)(Expr::sym("h") / (Expr::sym("tp") + Expr(1))); });
  CHECK(sum.aborted);
  CHECK(sum.err.find("division by a non-monomial") != std::string::npos);
  auto zero = run_in_child([] { (void)(Expr::sym("h") / Expr()); });
  CHECK(zero.aborted);
  CHECK(zero.err.find("division by a non-monomial (0)") != std::string::npos);
  auto fine = run_in_child([] { (void)(Expr::sym("h") * Expr(4) / (Expr::sym("tp") * Expr(2))); });
  CHECK_FALSE(fine.aborted);
}
