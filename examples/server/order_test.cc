#include "examples/server/order.h"

#include <optional>
#include <string>

#include "examples/server/json.h"
#include "examples/server/request_generator.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace examples {
namespace {

TEST(JsonTest, ParsesNestedDocumentAndEscapes) {
  std::string error;
  std::optional<JsonValue> doc = ParseJson(
      R"( {"a": [1, 2.5, -3e2], "s": "q\"\\\n\u00e9", "t": true, "n": null} )",
      &error);
  ASSERT_TRUE(doc) << error;
  const JsonValue* a = doc->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->elements().size(), 3u);
  EXPECT_EQ(a->elements()[2].number(), -300);
  EXPECT_EQ(doc->Find("s")->string(), "q\"\\\n\xc3\xa9");
  EXPECT_TRUE(doc->Find("t")->bool_value());
  EXPECT_TRUE(doc->Find("n")->is_null());
  EXPECT_EQ(doc->Find("missing"), nullptr);
}

TEST(JsonTest, RejectsMalformedText) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"unterminated", "tru",
                          "{} x", "[\"\x01\"]"}) {
    std::string error;
    EXPECT_FALSE(ParseJson(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(JsonTest, StringEscapingRoundTrips) {
  const std::string original = "tab\t quote\" back\\ nl\n ctl\x01 end";
  std::string encoded;
  AppendJsonString(original, &encoded);
  std::optional<JsonValue> decoded = ParseJson(encoded);
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->string(), original);
}

TEST(OrderTest, PricesAKnownOrder) {
  const std::string body = R"({"id": 7, "customer": "Ada", "currency": "EUR",
    "coupon": "SPRING10", "items": [
      {"sku": "A", "qty": 2, "price": 10.0, "tags": ["books", "gift"]},
      {"sku": "B", "qty": 1, "price": 5.5, "tags": ["books"]},
      {"sku": "C", "qty": 3, "price": 1.0, "tags": []}]})";
  OrderRequest request;
  std::string error;
  ASSERT_TRUE(ParseJsonRequest(body, &request, &error)) << error;
  EXPECT_EQ(request.id, 7);
  ASSERT_EQ(request.items.size(), 3u);

  const OrderResponse response = PriceOrder(request);
  EXPECT_DOUBLE_EQ(response.subtotal, 28.5);
  EXPECT_DOUBLE_EQ(response.discount, 2.85);
  EXPECT_DOUBLE_EQ(response.total, 25.65);
  ASSERT_EQ(response.spend_by_tag.size(), 2u);
  EXPECT_EQ(response.spend_by_tag[0].first, "books");
  EXPECT_DOUBLE_EQ(response.spend_by_tag[0].second, 25.5);
  ASSERT_EQ(response.top_items.size(), 3u);
  EXPECT_EQ(response.top_items[0].sku, "A");
  EXPECT_EQ(response.top_items[2].sku, "C");

  std::optional<JsonValue> rendered = ParseJson(RenderResponse(response));
  ASSERT_TRUE(rendered);
  EXPECT_DOUBLE_EQ(rendered->Find("total")->number(), 25.65);
  EXPECT_EQ(rendered->Find("top_items")->elements().size(), 3u);
}

TEST(OrderTest, RejectsInvalidRequests) {
  for (const char* bad : {
           R"([1])",
           R"({"id": 1, "customer": "x", "currency": "EUR", "items": []})",
           R"({"id": 1, "currency": "EUR", "items": [{"sku": "a", "qty": 1,
               "price": 1}]})",
           R"({"id": 1, "customer": "x", "currency": "EUR", "items": [
               {"sku": "a", "qty": 0.5, "price": 1}]})",
       }) {
    OrderRequest request;
    std::string error;
    EXPECT_FALSE(ParseJsonRequest(bad, &request, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

TEST(RequestGeneratorTest, GeneratedRequestsParseAndAreDeterministic) {
  RequestGenerator a(42), b(42);
  for (int i = 0; i < 200; ++i) {
    const std::string body = a.GenerateRequestBody();
    EXPECT_EQ(body, b.GenerateRequestBody());
    OrderRequest request;
    std::string error;
    ASSERT_TRUE(ParseJsonRequest(body, &request, &error)) << error << body;
    EXPECT_EQ(request.id, i + 1);
    EXPECT_GE(request.items.size(), 8u);
    EXPECT_LE(request.items.size(), 40u);
  }
}

}  // namespace
}  // namespace examples
}  // namespace ringprof
