// The server example's request handling: an order-pricing endpoint.
//
//   request body (JSON)  --ParseJsonRequest-->  OrderRequest
//   OrderRequest         --PriceOrder------->  OrderResponse
//   OrderResponse        --RenderResponse--->  response body (JSON)
//
// These three functions are the example's known hot paths; each lives in
// this translation unit on purpose, out of reach of the caller's inliner, so
// that profiles show them by name. Thread-compatible: no shared state.
#ifndef RINGPROF_EXAMPLES_SERVER_ORDER_H_
#define RINGPROF_EXAMPLES_SERVER_ORDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringprof {
namespace examples {

struct LineItem {
  std::string sku;
  int quantity = 0;
  double unit_price = 0;
  std::vector<std::string> tags;
};

struct OrderRequest {
  int64_t id = 0;
  std::string customer;
  std::string currency;
  std::string coupon;  // empty when absent
  std::vector<LineItem> items;
};

struct OrderResponse {
  int64_t id = 0;
  std::string customer;
  std::string currency;
  double subtotal = 0;
  double discount = 0;
  double total = 0;
  // Spend per tag, sorted by tag.
  std::vector<std::pair<std::string, double>> spend_by_tag;
  // The most expensive lines (by quantity * unit_price), at most five.
  std::vector<LineItem> top_items;
  std::string receipt_note;
};

// Parses and validates a request body. On failure returns false and sets
// *error; *request is then unspecified.
bool ParseJsonRequest(std::string_view body, OrderRequest* request,
                      std::string* error);

// The business logic: totals, discount, spend per tag, top lines.
OrderResponse PriceOrder(const OrderRequest& request);

// Serialises a response as a JSON object.
std::string RenderResponse(const OrderResponse& response);

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_SERVER_ORDER_H_
