#include "examples/server/order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "examples/server/json.h"

namespace ringprof {
namespace examples {
namespace {

bool GetString(const JsonValue& object, std::string_view key, bool required,
               std::string* out, std::string* error) {
  const JsonValue* value = object.Find(key);
  if (value == nullptr || value->is_null()) {
    if (required) *error = "missing \"" + std::string(key) + "\"";
    return !required;
  }
  if (value->kind() != JsonValue::Kind::kString) {
    *error = "\"" + std::string(key) + "\" must be a string";
    return false;
  }
  *out = value->string();
  return true;
}

bool GetNumber(const JsonValue& object, std::string_view key, double* out,
               std::string* error) {
  const JsonValue* value = object.Find(key);
  if (value == nullptr || value->kind() != JsonValue::Kind::kNumber) {
    *error = "\"" + std::string(key) + "\" must be a number";
    return false;
  }
  *out = value->number();
  return true;
}

bool ParseLineItem(const JsonValue& json, LineItem* item, std::string* error) {
  if (json.kind() != JsonValue::Kind::kObject) {
    *error = "items must be objects";
    return false;
  }
  double quantity = 0;
  if (!GetString(json, "sku", true, &item->sku, error) ||
      !GetNumber(json, "qty", &quantity, error) ||
      !GetNumber(json, "price", &item->unit_price, error)) {
    return false;
  }
  if (quantity < 1 || quantity > 1000 || quantity != std::floor(quantity)) {
    *error = "bad quantity for " + item->sku;
    return false;
  }
  item->quantity = static_cast<int>(quantity);
  if (const JsonValue* tags = json.Find("tags")) {
    if (tags->kind() != JsonValue::Kind::kArray) {
      *error = "tags must be an array";
      return false;
    }
    for (const JsonValue& tag : tags->elements()) {
      if (tag.kind() != JsonValue::Kind::kString) {
        *error = "tags must be strings";
        return false;
      }
      item->tags.push_back(tag.string());
    }
  }
  return true;
}

double LineTotal(const LineItem& item) {
  return item.quantity * item.unit_price;
}

double CouponRate(const std::string& coupon) {
  if (coupon == "SPRING10") return 0.10;
  if (coupon == "VIP25") return 0.25;
  return 0;
}

}  // namespace

bool ParseJsonRequest(std::string_view body, OrderRequest* request,
                      std::string* error) {
  std::optional<JsonValue> json = ParseJson(body, error);
  if (!json) return false;
  if (json->kind() != JsonValue::Kind::kObject) {
    *error = "request must be an object";
    return false;
  }
  double id = 0;
  if (!GetNumber(*json, "id", &id, error) ||
      !GetString(*json, "customer", true, &request->customer, error) ||
      !GetString(*json, "currency", true, &request->currency, error) ||
      !GetString(*json, "coupon", false, &request->coupon, error)) {
    return false;
  }
  request->id = static_cast<int64_t>(id);
  const JsonValue* items = json->Find("items");
  if (items == nullptr || items->kind() != JsonValue::Kind::kArray ||
      items->elements().empty()) {
    *error = "\"items\" must be a non-empty array";
    return false;
  }
  request->items.reserve(items->elements().size());
  for (const JsonValue& item_json : items->elements()) {
    LineItem item;
    if (!ParseLineItem(item_json, &item, error)) return false;
    request->items.push_back(std::move(item));
  }
  return true;
}

OrderResponse PriceOrder(const OrderRequest& request) {
  OrderResponse response;
  response.id = request.id;
  response.customer = request.customer;
  response.currency = request.currency;

  std::map<std::string, double> spend_by_tag;
  for (const LineItem& item : request.items) {
    const double line_total = LineTotal(item);
    response.subtotal += line_total;
    for (const std::string& tag : item.tags) spend_by_tag[tag] += line_total;
  }
  response.discount = response.subtotal * CouponRate(request.coupon);
  response.total = response.subtotal - response.discount;
  response.spend_by_tag.assign(spend_by_tag.begin(), spend_by_tag.end());

  std::vector<const LineItem*> by_value;
  by_value.reserve(request.items.size());
  for (const LineItem& item : request.items) by_value.push_back(&item);
  const size_t top = std::min<size_t>(5, by_value.size());
  std::partial_sort(by_value.begin(), by_value.begin() + top, by_value.end(),
                    [](const LineItem* a, const LineItem* b) {
                      if (LineTotal(*a) != LineTotal(*b)) {
                        return LineTotal(*a) > LineTotal(*b);
                      }
                      return a->sku < b->sku;
                    });
  for (size_t i = 0; i < top; ++i) response.top_items.push_back(*by_value[i]);

  response.receipt_note =
      "Thank you, " + request.customer + ": " +
      std::to_string(request.items.size()) + " lines, " +
      std::to_string(spend_by_tag.size()) + " categories" +
      (request.coupon.empty() ? std::string() : ", coupon " + request.coupon);
  return response;
}

std::string RenderResponse(const OrderResponse& response) {
  std::string out;  // grown as it goes, like most hand-rolled serialisers
  out.append("{\"id\":");
  AppendJsonNumber(static_cast<double>(response.id), &out);
  out.append(",\"customer\":");
  AppendJsonString(response.customer, &out);
  out.append(",\"currency\":");
  AppendJsonString(response.currency, &out);
  out.append(",\"subtotal\":");
  AppendJsonNumber(response.subtotal, &out);
  out.append(",\"discount\":");
  AppendJsonNumber(response.discount, &out);
  out.append(",\"total\":");
  AppendJsonNumber(response.total, &out);
  out.append(",\"spend_by_tag\":{");
  for (size_t i = 0; i < response.spend_by_tag.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendJsonString(response.spend_by_tag[i].first, &out);
    out.push_back(':');
    AppendJsonNumber(response.spend_by_tag[i].second, &out);
  }
  out.append("},\"top_items\":[");
  for (size_t i = 0; i < response.top_items.size(); ++i) {
    const LineItem& item = response.top_items[i];
    if (i > 0) out.push_back(',');
    out.append("{\"sku\":");
    AppendJsonString(item.sku, &out);
    out.append(",\"qty\":");
    AppendJsonNumber(item.quantity, &out);
    out.append(",\"line_total\":");
    AppendJsonNumber(LineTotal(item), &out);
    out.append(",\"label\":");
    // A display label built per line: the temporary strings are realistic.
    AppendJsonString(item.sku + " x" + std::to_string(item.quantity) + " (" +
                         (item.tags.empty() ? "untagged" : item.tags.front()) +
                         ")",
                     &out);
    out.push_back('}');
  }
  out.append("],\"note\":");
  AppendJsonString(response.receipt_note, &out);
  out.push_back('}');
  return out;
}

}  // namespace examples
}  // namespace ringprof
