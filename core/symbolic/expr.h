// Symbolic sizes: polynomials with rational coefficients over named
// dimensions ("b", "s", "h", "tp", ...), with negative exponents allowed so
// that a shard "s/tp" is a monomial. Shapes, element counts, bytes and FLOPs
// are Exprs; numbers appear only when a job binds the symbols.
//
// Canonical form (so printing and equality are stable): terms sorted by
// their factor lists, each factor list sorted by symbol name, like terms
// merged, zero terms dropped, coefficients reduced fractions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace sc {

using Bindings = std::map<std::string, int64_t, std::less<>>;

class Expr {
 public:
  struct Term {
    int64_t num = 0, den = 1;  // coefficient num/den, den > 0, reduced
    std::vector<std::pair<std::string, int>> factors;  // (symbol, exponent != 0)
  };

  Expr() = default;  // zero
  Expr(int64_t constant);  // NOLINT(implicit): Expr e = 2;
  static Expr sym(std::string name);

  Expr operator+(const Expr& o) const;
  Expr operator-(const Expr& o) const;
  Expr operator*(const Expr& o) const;
  // Division by a monomial (a product of symbols and a constant). Dividing
  // by a sum (or by zero) is not needed by any shape: SC_CHECK stops it in
  // every build (base/check.h).
  Expr operator/(const Expr& o) const;
  Expr& operator+=(const Expr& o) { return *this = *this + o; }
  Expr& operator*=(const Expr& o) { return *this = *this * o; }
  bool operator==(const Expr& o) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }

  bool is_zero() const { return terms_.empty(); }
  bool is_monomial() const { return terms_.size() <= 1; }
  const std::vector<Term>& terms() const { return terms_; }

  // "b*s*h/tp", "2*b*s^2*h/tp + 4*b*s", "0". Deterministic.
  std::string to_string() const;

  // Exact integer value; an error if a symbol is unbound, if a term (or the
  // sum) is not an integer — e.g. s/tp with s=2048, tp=3 — or on overflow of
  // int64. `what` names the quantity for the message.
  Result<int64_t> eval(const Bindings& b, const std::string& what = "expression") const;
  // Floating value (for FLOPs totals that may exceed int64); unbound symbols
  // are an error.
  Result<double> eval_double(const Bindings& b, const std::string& what = "expression") const;

 private:
  void normalize();
  std::vector<Term> terms_;
};

}  // namespace sc
