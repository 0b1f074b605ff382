// A small JSON document model and recursive-descent parser, written the way
// many services still do: a tree of owned strings and vectors, built per
// request and thrown away. That allocation pattern is the point — it is what
// the server example exists to profile.
//
// Not a validating parser for every corner of RFC 8259: \u escapes outside
// the BMP are passed through as-is, and numbers are parsed with strtod.
#ifndef RINGPROF_EXAMPLES_SERVER_JSON_H_
#define RINGPROF_EXAMPLES_SERVER_JSON_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringprof {
namespace examples {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;
  static JsonValue Bool(bool value);
  static JsonValue Number(double value);
  static JsonValue String(std::string value);
  static JsonValue Array();
  static JsonValue Object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool bool_value() const { return bool_; }
  double number() const { return number_; }
  const std::string& string() const { return string_; }
  // Array elements, or object values (in document order).
  const std::vector<JsonValue>& elements() const { return elements_; }
  // Object keys, parallel to elements().
  const std::vector<std::string>& keys() const { return keys_; }

  // Object member lookup (linear: request objects are small); nullptr when
  // absent or when this is not an object.
  const JsonValue* Find(std::string_view key) const;

  void Append(JsonValue value);                   // arrays
  void Insert(std::string key, JsonValue value);  // objects

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<std::string> keys_;
  std::vector<JsonValue> elements_;
};

// Parses a complete JSON text. On failure returns nullopt and, if `error` is
// not null, stores a message with the byte offset.
std::optional<JsonValue> ParseJson(std::string_view text,
                                   std::string* error = nullptr);

// Appends `text` as a quoted, escaped JSON string.
void AppendJsonString(std::string_view text, std::string* out);

// Appends a number the way JSON wants it (no NaN/Inf: they become null).
void AppendJsonNumber(double value, std::string* out);

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_SERVER_JSON_H_
