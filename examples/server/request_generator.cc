#include "examples/server/request_generator.h"

#include <cstdio>

#include "examples/server/json.h"

namespace ringprof {
namespace examples {
namespace {

constexpr const char* kCustomers[] = {
    "Ada Lovelace",   "Grace Hopper",      "Edsger \"EWD\" Dijkstra",
    "Barbara Liskov", "Ken Thompson",      "Frances Allen",
    "Donald Knuth",   "Margaret Hamilton", "Niklaus Wirth",
    "Radia Perlman",  "Leslie Lamport",    "Tony Hoare",
};
constexpr const char* kCurrencies[] = {"EUR", "USD", "GBP", "CHF", "JPY"};
constexpr const char* kCoupons[] = {"", "", "", "SPRING10", "VIP25", "EXPIRED"};
constexpr const char* kTags[] = {
    "books",   "garden", "kitchen", "outdoor", "toys",    "audio",
    "gift",    "sale",   "new",     "bulk",    "fragile", "eco",
    "premium", "red",    "blue",    "xl",      "s",       "refurbished",
};

template <typename T, size_t N>
constexpr size_t CountOf(const T (&)[N]) {
  return N;
}

}  // namespace

int RequestGenerator::Uniform(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng_);
}

std::string RequestGenerator::GenerateRequestBody() {
  std::string body;
  body.append("{\"id\":");
  AppendJsonNumber(static_cast<double>(next_id_++), &body);
  body.append(",\"customer\":");
  AppendJsonString(kCustomers[Uniform(0, CountOf(kCustomers) - 1)], &body);
  body.append(",\"currency\":");
  AppendJsonString(kCurrencies[Uniform(0, CountOf(kCurrencies) - 1)], &body);
  const char* coupon = kCoupons[Uniform(0, CountOf(kCoupons) - 1)];
  if (*coupon != '\0') {
    body.append(",\"coupon\":");
    AppendJsonString(coupon, &body);
  }
  body.append(",\"items\":[");
  const int items = Uniform(8, 40);
  for (int i = 0; i < items; ++i) {
    if (i > 0) body.push_back(',');
    char sku[32];
    std::snprintf(sku, sizeof(sku), "SKU-%c%c-%05d", 'A' + Uniform(0, 25),
                  'A' + Uniform(0, 25), Uniform(0, 99999));
    body.append("{\"sku\":");
    AppendJsonString(sku, &body);
    body.append(",\"qty\":");
    AppendJsonNumber(Uniform(1, 12), &body);
    body.append(",\"price\":");
    AppendJsonNumber(Uniform(99, 99999) / 100.0, &body);
    body.append(",\"tags\":[");
    const int tags = Uniform(0, 4);
    for (int t = 0; t < tags; ++t) {
      if (t > 0) body.push_back(',');
      AppendJsonString(kTags[Uniform(0, CountOf(kTags) - 1)], &body);
    }
    body.append("]}");
  }
  body.append("]}");
  return body;
}

}  // namespace examples
}  // namespace ringprof
