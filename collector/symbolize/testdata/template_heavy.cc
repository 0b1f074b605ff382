// A template-heavy translation unit for compiler benchmarks
// (tools/bench.d/symbolizer, tools/bench.d/compile_overhead): it is compiled,
// never built into anything.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

template <int N>
struct Fib {
  static constexpr long value = Fib<N - 1>::value + Fib<N - 2>::value;
};
template <>
struct Fib<0> {
  static constexpr long value = 0;
};
template <>
struct Fib<1> {
  static constexpr long value = 1;
};

template <typename T, int N>
struct Holder {
  std::map<std::string, std::vector<T>> m;
  std::unordered_map<int, std::set<T>> u;
  void Add(const std::string& k, T v) {
    m[k].push_back(v);
    u[N].insert(v);
    std::sort(m[k].begin(), m[k].end());
  }
};

template <int N>
long Instantiate() {
  Holder<long, N> h;
  h.Add("x", Fib<N % 40>::value);
  std::variant<int, double, std::string> v = std::to_string(N);
  std::regex re("[a-z]+" + std::to_string(N));
  return h.m.size() + std::visit([](auto&& x) { return sizeof(x); }, v) +
         std::regex_match("abc", re) + Instantiate<N - 1>();
}
template <>
long Instantiate<0>() {
  return 0;
}

int main() { std::cout << Instantiate<60>() << "\n"; }
