#include "symbolic/expr.h"

#include <algorithm>
#include <numeric>

#include "base/check.h"

namespace sc {
namespace {

using Factors = std::vector<std::pair<std::string, int>>;

Factors multiply(const Factors& a, const Factors& b, int sign_b) {
  std::map<std::string, int> m;
  for (const auto& [s, e] : a) m[s] += e;
  for (const auto& [s, e] : b) m[s] += sign_b * e;
  Factors out;
  for (const auto& [s, e] : m)
    if (e != 0) out.emplace_back(s, e);
  return out;  // std::map iteration: sorted by name
}

void reduce(int64_t& num, int64_t& den) {
  if (den < 0) { num = -num; den = -den; }
  int64_t g = std::gcd(num < 0 ? -num : num, den);
  if (g > 1) { num /= g; den /= g; }
}

using i128 = __int128;
constexpr i128 kI64Max = INT64_MAX;

i128 gcd128(i128 a, i128 b) {
  while (b != 0) { i128 t = a % b; a = b; b = t; }
  return a;
}

}  // namespace

Expr::Expr(int64_t c) {
  if (c != 0) terms_.push_back(Term{c, 1, {}});
}

Expr Expr::sym(std::string name) {
  Expr e;
  e.terms_.push_back(Term{1, 1, {{std::move(name), 1}}});
  return e;
}

void Expr::normalize() {
  std::map<Factors, std::pair<i128, i128>> acc;  // factors -> num/den
  for (auto& t : terms_) {
    auto& [n, d] = acc.try_emplace(t.factors, i128{0}, i128{1}).first->second;
    n = n * t.den + i128{t.num} * d;
    d = d * t.den;
    i128 g = gcd128(n < 0 ? -n : n, d);
    if (g > 1) { n /= g; d /= g; }
  }
  terms_.clear();
  for (auto& [f, nd] : acc) {
    if (nd.first == 0) continue;
    Term t{static_cast<int64_t>(nd.first), static_cast<int64_t>(nd.second), f};
    reduce(t.num, t.den);
    terms_.push_back(std::move(t));
  }
}

Expr Expr::operator+(const Expr& o) const {
  Expr r = *this;
  r.terms_.insert(r.terms_.end(), o.terms_.begin(), o.terms_.end());
  r.normalize();
  return r;
}

Expr Expr::operator-(const Expr& o) const { return *this + o * Expr(-1); }

Expr Expr::operator*(const Expr& o) const {
  Expr r;
  for (const auto& a : terms_)
    for (const auto& b : o.terms_) {
      Term t{a.num * b.num, a.den * b.den, multiply(a.factors, b.factors, 1)};
      reduce(t.num, t.den);
      r.terms_.push_back(std::move(t));
    }
  r.normalize();
  return r;
}

Expr Expr::operator/(const Expr& o) const {
  SC_CHECK(o.terms_.size() == 1, "division by a non-monomial (" + o.to_string() + ")");
  const Term& d = o.terms_.front();
  Expr r;
  for (const auto& a : terms_) {
    Term t{a.num * d.den, a.den * d.num, multiply(a.factors, d.factors, -1)};
    reduce(t.num, t.den);
    r.terms_.push_back(std::move(t));
  }
  r.normalize();
  return r;
}

bool Expr::operator==(const Expr& o) const {
  if (terms_.size() != o.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i) {
    const Term &a = terms_[i], &b = o.terms_[i];
    if (a.num != b.num || a.den != b.den || a.factors != b.factors) return false;
  }
  return true;
}

std::string Expr::to_string() const {
  if (terms_.empty()) return "0";
  std::string out;
  for (size_t i = 0; i < terms_.size(); ++i) {
    const Term& t = terms_[i];
    int64_t num = t.num;
    if (i > 0) out += num < 0 ? " - " : " + ";
    else if (num < 0) out += "-";
    if (num < 0) num = -num;
    std::string numer, denom;
    auto append = [](std::string& s, const std::string& x) {
      if (!s.empty()) s += "*";
      s += x;
    };
    if (num != 1 || t.factors.empty()) append(numer, std::to_string(num));
    if (t.den != 1) append(denom, std::to_string(t.den));
    for (const auto& [s, e] : t.factors) {
      int a = e < 0 ? -e : e;
      std::string f = a == 1 ? s : s + "^" + std::to_string(a);
      append(e > 0 ? numer : denom, f);
    }
    if (numer.empty()) numer = "1";
    out += numer;
    if (!denom.empty()) out += "/" + denom;
  }
  return out;
}

Result<int64_t> Expr::eval(const Bindings& b, const std::string& what) const {
  // Sum of rationals with a common denominator, in 128-bit.
  i128 num = 0, den = 1;
  auto overflow = [&]() {
    return make_error(ErrorCode::kInvalidArgument,
                      what + " = " + to_string() + " overflows 64-bit integers; the sizes are absurd");
  };
  for (const auto& t : terms_) {
    i128 tn = t.num, td = t.den;
    for (const auto& [s, e] : t.factors) {
      auto it = b.find(s);
      if (it == b.end())
        return make_error(ErrorCode::kInternal, what + ": symbol '" + s + "' is unbound");
      if (it->second <= 0)
        return make_error(ErrorCode::kInvalidArgument,
                          what + ": symbol '" + s + "' must be positive, got " + std::to_string(it->second));
      for (int k = 0; k < (e < 0 ? -e : e); ++k) {
        i128& x = e > 0 ? tn : td;
        x *= it->second;
        if (x > kI64Max || x < -kI64Max) return overflow();
      }
    }
    num = num * td + tn * den;
    den = den * td;
    if (num > kI64Max * 64 || num < -kI64Max * 64 || den > kI64Max) return overflow();
    i128 g = gcd128(num < 0 ? -num : num, den);
    if (g > 1) { num /= g; den /= g; }
  }
  if (num % den != 0) {
    std::string vals;
    for (const auto& t : terms_)
      for (const auto& [s, e] : t.factors)
        if (vals.find(s + "=") == std::string::npos) {
          auto it = b.find(s);
          vals += (vals.empty() ? "" : ", ") + s + "=" + std::to_string(it->second);
        }
    return make_error(ErrorCode::kNotDivisible,
                      what + " = " + to_string() + " is not an integer (" + vals + ")");
  }
  i128 v = num / den;
  if (v > kI64Max || v < -kI64Max) return overflow();
  return static_cast<int64_t>(v);
}

Result<double> Expr::eval_double(const Bindings& b, const std::string& what) const {
  double sum = 0;
  for (const auto& t : terms_) {
    double v = static_cast<double>(t.num) / static_cast<double>(t.den);
    for (const auto& [s, e] : t.factors) {
      auto it = b.find(s);
      if (it == b.end())
        return make_error(ErrorCode::kInternal, what + ": symbol '" + s + "' is unbound");
      for (int k = 0; k < (e < 0 ? -e : e); ++k)
        v = e > 0 ? v * static_cast<double>(it->second) : v / static_cast<double>(it->second);
    }
    sum += v;
  }
  return sum;
}

}  // namespace sc
