// Flame graphs and top tables from pprof profiles.
//
// A profile is read once into a call tree keyed by interned function names;
// the tree is flattened in pre-order with pruning into FlameGraphNodes; the
// HTML page embeds those nodes as JSON inside a <script type=
// "application/json"> element and draws them with inline JavaScript on a
// <canvas>. Every string reaches the page either HTML-escaped (the <title>)
// or JSON-escaped with <, >, & as \u escapes (so no function name can close
// the script element) and is put into the DOM with textContent only.

#include "collector/render/flamegraph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "collector/pprof/utf8.h"
#include "collector/render/flamegraph_assets.h"
#include "collector/render/short_name.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Location;
using perftools::profiles::Mapping;
using perftools::profiles::Profile;
using perftools::profiles::Sample;

constexpr double kPruneFraction = 1e-4;  // 0.01% of the root's total

// Function names to small integers, shared by every tree of one rendering so
// a diff can match frames by id. Names are viewed, not copied: they live in
// the profiles (or nodes) being rendered, which outlive the table, or in the
// table itself (InternOwned).
class NameTable {
 public:
  int Intern(absl::string_view name) {
    auto [it, inserted] = ids_.try_emplace(name, names_.size());
    if (inserted) names_.push_back(name);
    return it->second;
  }
  int InternOwned(std::string name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    owned_.push_back(std::move(name));
    return Intern(owned_.back());
  }
  absl::string_view Name(int id) const { return names_[id]; }
  int size() const { return static_cast<int>(names_.size()); }

 private:
  absl::flat_hash_map<absl::string_view, int> ids_;
  std::vector<absl::string_view> names_;
  std::deque<std::string> owned_;  // stable addresses
};

// Turns a sample's location ids into root-first frame name ids.
class StackReader {
 public:
  StackReader(const Profile& profile, NameTable* names)
      : profile_(profile), names_(names) {
    for (const auto& function : profile.function()) {
      function_names_[function.id()] = &String(function.name());
    }
    for (const auto& mapping : profile.mapping()) {
      mappings_[mapping.id()] = &mapping;
    }
    for (const auto& location : profile.location()) {
      locations_[location.id()] = &location;
    }
  }

  // Root first: the last location's outermost line first, the leaf
  // location's innermost inlined line last.
  void RootFirstFrames(const Sample& sample, std::vector<int>* frames) {
    frames->clear();
    for (int i = sample.location_id_size() - 1; i >= 0; --i) {
      const std::vector<int>& location = LocationFrames(sample.location_id(i));
      frames->insert(frames->end(), location.begin(), location.end());
    }
  }

 private:
  const std::string& String(int64_t index) const {
    static const std::string* const kEmpty = new std::string();
    if (index < 0 || index >= profile_.string_table_size()) return *kEmpty;
    return profile_.string_table(static_cast<int>(index));
  }

  // Frames of one location, outermost first; cached per location id.
  const std::vector<int>& LocationFrames(uint64_t location_id) {
    auto [it, inserted] = frames_by_location_.try_emplace(location_id);
    if (!inserted) return it->second;
    std::vector<int>& frames = it->second;
    auto location = locations_.find(location_id);
    if (location == locations_.end()) {
      frames.push_back(
          names_->InternOwned(absl::StrFormat("[location %d]", location_id)));
      return frames;
    }
    const Location& loc = *location->second;
    for (int i = loc.line_size() - 1; i >= 0; --i) {
      const int name = FunctionName(loc.line(i).function_id());
      if (name >= 0) frames.push_back(name);
    }
    if (frames.empty()) {
      frames.push_back(names_->InternOwned(AddressName(loc)));
    }
    return frames;
  }

  // The name id of a function id; -1 for an unknown or unnamed function.
  // Cached: many locations share a function.
  int FunctionName(uint64_t function_id) {
    auto [it, inserted] = function_name_ids_.try_emplace(function_id, -1);
    if (inserted) {
      auto function = function_names_.find(function_id);
      if (function != function_names_.end() && !function->second->empty()) {
        it->second = names_->Intern(*function->second);
      }
    }
    return it->second;
  }

  // "libfoo.so+0x1234" (file offset) for an unsymbolized location.
  std::string AddressName(const Location& location) const {
    auto mapping = mappings_.find(location.mapping_id());
    if (mapping == mappings_.end()) {
      return absl::StrFormat("0x%x", location.address());
    }
    const Mapping& map = *mapping->second;
    absl::string_view file = String(map.filename());
    size_t slash = file.rfind('/');
    if (slash != absl::string_view::npos) file.remove_prefix(slash + 1);
    if (file.empty()) file = "[unknown]";
    return absl::StrFormat(
        "%s+0x%x", file,
        location.address() - map.memory_start() + map.file_offset());
  }

  const Profile& profile_;
  NameTable* names_;
  absl::flat_hash_map<uint64_t, const std::string*> function_names_;
  absl::flat_hash_map<uint64_t, const Mapping*> mappings_;
  absl::flat_hash_map<uint64_t, const Location*> locations_;
  absl::flat_hash_map<uint64_t, std::vector<int>> frames_by_location_;
  absl::flat_hash_map<uint64_t, int> function_name_ids_;
};

int ValueIndex(const Profile& profile, int sample_index) {
  if (sample_index >= 0 && sample_index < profile.sample_type_size()) {
    return sample_index;
  }
  return profile.sample_type_size() - 1;  // pprof's default; -1 if none
}

int64_t SampleValue(const Sample& sample, int index) {
  return index >= 0 && index < sample.value_size() ? sample.value(index) : 0;
}

// The unpruned call tree of one profile.
class CallTree {
 public:
  struct Node {
    int name = -1;
    int64_t total = 0;
    int64_t self = 0;
    int first_child = -1;  // children in order of creation, linked
    int next_sibling = -1;
  };

  CallTree(const Profile& profile, int sample_index, NameTable* names) {
    nodes_.emplace_back();
    nodes_[0].name = names->Intern("all");
    const int index = ValueIndex(profile, sample_index);
    StackReader reader(profile, names);
    std::vector<int> frames;
    for (const Sample& sample : profile.sample()) {
      int64_t value = SampleValue(sample, index);
      if (value == 0) continue;
      reader.RootFirstFrames(sample, &frames);
      int node = 0;
      nodes_[0].total += value;
      for (int name : frames) {
        node = Child(node, name);
        nodes_[node].total += value;
      }
      nodes_[node].self += value;
    }
  }

  const Node& node(int index) const { return nodes_[index]; }
  const Node& root() const { return nodes_[0]; }
  size_t size() const { return nodes_.size(); }

  // The child of `node` named `name`, or -1.
  int FindChild(int node, int name) const {
    if (node < 0) return -1;
    auto it = children_.find(Key(node, name));
    return it == children_.end() ? -1 : it->second;
  }

 private:
  static uint64_t Key(int node, int name) {
    return (static_cast<uint64_t>(node) << 32) | static_cast<uint32_t>(name);
  }

  int Child(int node, int name) {
    auto [it, inserted] =
        children_.try_emplace(Key(node, name), static_cast<int>(nodes_.size()));
    if (!inserted) return it->second;
    const int child = it->second;
    nodes_.emplace_back();
    nodes_[child].name = name;
    nodes_[child].next_sibling = nodes_[node].first_child;
    nodes_[node].first_child = child;
    return child;
  }

  std::vector<Node> nodes_;
  // One map for the whole tree rather than one per node: far fewer
  // allocations.
  absl::flat_hash_map<uint64_t, int> children_;  // (parent, name) -> child
};

// The smallest total a node needs to be drawn: 0.01% of the root's, raised
// so that at most kMaxFlameGraphNodes nodes qualify. A child's total never
// exceeds its parent's, so the kept set is closed under ancestors.
int64_t PruneThreshold(const CallTree& tree, size_t node_count) {
  int64_t threshold = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(tree.root().total * kPruneFraction)));
  if (node_count <= static_cast<size_t>(kMaxFlameGraphNodes)) return threshold;
  std::vector<int64_t> totals;
  totals.reserve(node_count);
  for (size_t i = 0; i < node_count; ++i) {
    totals.push_back(tree.node(static_cast<int>(i)).total);
  }
  std::nth_element(totals.begin(), totals.begin() + (kMaxFlameGraphNodes - 1),
                   totals.end(), std::greater<int64_t>());
  // Ties at the cut-off are dropped together: strictly above it.
  return std::max(threshold, totals[kMaxFlameGraphNodes - 1] + 1);
}

double Share(int64_t value, int64_t total) {
  return total > 0 ? static_cast<double>(value) / static_cast<double>(total)
                   : 0.0;
}

// Grey when the share is unchanged, towards red as it grows and towards blue
// as it shrinks. The saturation is the square root of the change relative to
// the larger share, so that a 10% change is already visible.
std::string DiffColor(double target_share, double base_share) {
  double larger = std::max(target_share, base_share);
  double change = larger > 0 ? (target_share - base_share) / larger : 0.0;
  constexpr int kNeutral[3] = {0xd0, 0xd0, 0xd0};
  constexpr int kGrew[3] = {0xe8, 0x30, 0x30};
  constexpr int kShrank[3] = {0x30, 0x60, 0xe8};
  const int* toward = change >= 0 ? kGrew : kShrank;
  double amount = std::sqrt(std::min(1.0, std::fabs(change)));
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(
        std::lround(kNeutral[c] + (toward[c] - kNeutral[c]) * amount));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

// Pre-order flattening of `tree` with pruning; with `base`, each node also
// gets the values of the same call path in `base` and its diff colour. With
// `name_ids`, the nodes' functions are left empty and their ids in `names`
// are appended there instead (no copy of each name).
std::vector<FlameGraphNode> Flatten(const CallTree& tree, const CallTree* base,
                                    const NameTable& names, size_t node_count,
                                    std::vector<int>* name_ids = nullptr) {
  const int64_t threshold = PruneThreshold(tree, node_count);
  std::vector<FlameGraphNode> out;
  size_t kept = 0;  // closed under ancestors: every node above the threshold
  for (size_t i = 0; i < node_count; ++i) {
    kept += tree.node(static_cast<int>(i)).total >= threshold;
  }
  out.reserve(kept);
  if (name_ids != nullptr) name_ids->reserve(kept);
  struct Pending {
    int node;
    int base_node;
    int parent;
    int depth;
  };
  std::vector<Pending> stack = {{0, base != nullptr ? 0 : -1, -1, 0}};
  std::vector<std::pair<absl::string_view, int>> children;
  while (!stack.empty()) {
    Pending pending = stack.back();
    stack.pop_back();
    const CallTree::Node& node = tree.node(pending.node);
    const int index = static_cast<int>(out.size());
    FlameGraphNode& flat = out.emplace_back();
    flat.parent = pending.parent;
    flat.depth = pending.depth;
    if (name_ids != nullptr) {
      name_ids->push_back(node.name);
    } else {
      flat.function = std::string(names.Name(node.name));
    }
    flat.total = node.total;
    flat.self = node.self;
    if (base != nullptr) {
      if (pending.base_node >= 0) {
        flat.base_total = base->node(pending.base_node).total;
        flat.base_self = base->node(pending.base_node).self;
      }
      flat.color = DiffColor(Share(flat.total, tree.root().total),
                             Share(flat.base_total, base->root().total));
    }
    children.clear();
    for (int child = node.first_child; child >= 0;
         child = tree.node(child).next_sibling) {
      if (tree.node(child).total >= threshold) {
        children.emplace_back(names.Name(tree.node(child).name), child);
      }
    }
    // Pushed in reverse name order so they pop (and appear) sorted.
    std::sort(children.begin(), children.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [name, child] : children) {
      int base_child = base != nullptr ? base->FindChild(pending.base_node,
                                                         tree.node(child).name)
                                       : -1;
      stack.push_back({child, base_child, index, pending.depth + 1});
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Escaping.

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A JSON string literal safe to embed in a <script> element: <, >, & and
// the JavaScript line separators become \u escapes; invalid UTF-8 becomes
// U+FFFD.
void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          *out += "\\\"";
          break;
        case '\\':
          *out += "\\\\";
          break;
        case '\n':
          *out += "\\n";
          break;
        case '\t':
          *out += "\\t";
          break;
        case '<':
          *out += "\\u003c";
          break;
        case '>':
          *out += "\\u003e";
          break;
        case '&':
          *out += "\\u0026";
          break;
        default:
          if (c < 0x20) {
            absl::StrAppendFormat(out, "\\u%04x", c);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      *out += "\\ufffd";
      ++i;
    } else if (length == 3 && c == 0xe2 &&
               static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) & 0xfe) == 0xa8) {
      // U+2028 / U+2029: valid JSON, but line terminators to older JS.
      absl::StrAppendFormat(
          out, "\\u%04x",
          0x2028 + (static_cast<unsigned char>(text[i + 2]) - 0xa8));
      i += 3;
    } else {
      out->append(text.data() + i, length);
      i += length;
    }
  }
  out->push_back('"');
}

// ---------------------------------------------------------------------------
// Values and units.

struct TypeAndUnit {
  std::string type;
  std::string unit;
};

TypeAndUnit SampleType(const Profile& profile, int sample_index) {
  int index = ValueIndex(profile, sample_index);
  if (index < 0) return {"samples", "count"};
  auto string = [&](int64_t i) -> std::string {
    return i >= 0 && i < profile.string_table_size()
               ? profile.string_table(static_cast<int>(i))
               : "";
  };
  const auto& type = profile.sample_type(index);
  return {string(type.type()), string(type.unit())};
}

// pprof's style: the largest unit in which the value is at least 1, two
// decimals, ".00" dropped ("1.50s", "30ms", "12.25MB", "17").
std::string FormatValue(int64_t value, absl::string_view unit) {
  struct Scale {
    const char* suffix;
    double factor;
  };
  static constexpr Scale kTime[] = {
      {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
  static constexpr Scale kBytes[] = {{"TB", 1099511627776.0},
                                     {"GB", 1073741824.0},
                                     {"MB", 1048576.0},
                                     {"kB", 1024.0},
                                     {"B", 1}};
  const Scale* scales = nullptr;
  size_t count = 0;
  if (unit == "nanoseconds") {
    scales = kTime;
    count = 4;
  } else if (unit == "bytes") {
    scales = kBytes;
    count = 5;
  }
  if (scales == nullptr || value == 0) return absl::StrCat(value);
  double magnitude = std::fabs(static_cast<double>(value));
  const Scale* chosen = &scales[count - 1];
  for (size_t i = 0; i < count; ++i) {
    if (magnitude >= scales[i].factor) {
      chosen = &scales[i];
      break;
    }
  }
  std::string number =
      absl::StrFormat("%.2f", static_cast<double>(value) / chosen->factor);
  if (absl::string_view(number).size() > 3 &&
      absl::string_view(number).substr(number.size() - 3) == ".00") {
    number.resize(number.size() - 3);
  }
  return absl::StrCat(number, chosen->suffix);
}

// ---------------------------------------------------------------------------
// The page.

// The page's data. `names` are the distinct function names in order of
// first appearance among `nodes`; `name_ids[i]` is node i's index in them.
std::string TreeJson(const std::vector<FlameGraphNode>& nodes,
                     const std::vector<absl::string_view>& names,
                     const std::vector<int>& name_ids, bool diff,
                     const std::string& title, const TypeAndUnit& type,
                     int64_t base_total) {
  std::string json = "{\"title\":";
  AppendJsonString(title, &json);
  json += ",\"type\":";
  AppendJsonString(type.type, &json);
  json += ",\"unit\":";
  AppendJsonString(type.unit, &json);
  absl::StrAppend(&json, ",\"diff\":", diff ? "true" : "false",
                  ",\"baseTotal\":", base_total, ",\n\"names\":[");
  for (size_t id = 0; id < names.size(); ++id) {
    if (id > 0) json += ",\n";
    AppendJsonString(names[id], &json);
  }
  json += "],\n\"nodes\":[";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const FlameGraphNode& node = nodes[i];
    absl::StrAppend(&json, i > 0 ? ",\n[" : "[", node.parent, ",", name_ids[i],
                    ",", node.total, ",", node.self);
    if (diff) {
      absl::StrAppend(&json, ",", node.base_total, ",", node.base_self, ",");
      AppendJsonString(node.color, &json);
    }
    json += "]";
  }
  json += "]}";
  return json;
}

// The same for nodes that name their functions.
std::string TreeJson(const std::vector<FlameGraphNode>& nodes, bool diff,
                     const std::string& title, const TypeAndUnit& type,
                     int64_t base_total) {
  NameTable table;
  std::vector<int> name_ids;
  name_ids.reserve(nodes.size());
  for (const FlameGraphNode& node : nodes) {
    name_ids.push_back(table.Intern(node.function));
  }
  std::vector<absl::string_view> names;
  names.reserve(table.size());
  for (int id = 0; id < table.size(); ++id) names.push_back(table.Name(id));
  return TreeJson(nodes, names, name_ids, diff, title, type, base_total);
}

// The same for nodes flattened with `tree_ids` (Flatten's name_ids): ids in
// `table`, renumbered in order of first appearance.
std::string TreeJsonOfIds(const std::vector<FlameGraphNode>& nodes,
                          const NameTable& table, std::vector<int> tree_ids,
                          const std::string& title, const TypeAndUnit& type) {
  std::vector<int> dense(table.size(), -1);
  std::vector<absl::string_view> names;
  for (int& id : tree_ids) {
    if (dense[id] < 0) {
      dense[id] = static_cast<int>(names.size());
      names.push_back(table.Name(id));
    }
    id = dense[id];
  }
  return TreeJson(nodes, names, tree_ids, /*diff=*/false, title, type,
                  /*base_total=*/0);
}

// The page (flamegraph.html with flamegraph.css and flamegraph.js put in,
// all embedded at build time) split at its two per-profile parts.
struct PageTemplate {
  std::string before_title, before_data, after_data;
};

const PageTemplate& Template() {
  static const PageTemplate* page = [] {
    const std::string html = absl::StrReplaceAll(
        kFlamegraphHtml,
        {{"{{style}}", kFlamegraphCss}, {"{{script}}", kFlamegraphJs}});
    const size_t title = html.find("{{title}}");
    const size_t data = html.find("{{data}}");
    auto* t = new PageTemplate;
    t->before_title = html.substr(0, title);
    t->before_data = html.substr(title + 9, data - title - 9);
    t->after_data = html.substr(data + 8);
    return t;
  }();
  return *page;
}

std::string Page(const std::string& title, const std::string& json) {
  const PageTemplate& t = Template();
  return absl::StrCat(t.before_title, HtmlEscape(title), t.before_data, json,
                      t.after_data);
}

// A function's row of the top table.
struct TopRow {
  int name = 0;
  int64_t flat = 0;
  int64_t cum = 0;
};

// The rows of the top table from the unpruned call tree, hottest first: a
// function's flat value is the self value of its nodes, its cum value the
// total of its outermost nodes (a recursive function counts once per
// sample, as in pprof).
std::vector<TopRow> TopRows(const CallTree& tree, const NameTable& names) {
  absl::flat_hash_map<int, TopRow> rows;
  absl::flat_hash_map<int, int> on_path;  // name -> nodes of it on the path
  // Depth first; a negative entry leaves the node -entry - 1.
  std::vector<int> stack;
  for (int child = tree.root().first_child; child >= 0;
       child = tree.node(child).next_sibling) {
    stack.push_back(child);
  }
  while (!stack.empty()) {
    const int entry = stack.back();
    stack.pop_back();
    if (entry < 0) {
      --on_path[tree.node(-entry - 1).name];
      continue;
    }
    const CallTree::Node& node = tree.node(entry);
    TopRow& row = rows[node.name];
    row.name = node.name;
    row.flat += node.self;
    int& depth = on_path[node.name];
    if (depth++ == 0) row.cum += node.total;
    stack.push_back(-entry - 1);
    for (int child = node.first_child; child >= 0;
         child = tree.node(child).next_sibling) {
      stack.push_back(child);
    }
  }

  std::vector<TopRow> sorted;
  sorted.reserve(rows.size());
  for (const auto& [name, row] : rows) sorted.push_back(row);
  std::sort(sorted.begin(), sorted.end(),
            [&](const TopRow& a, const TopRow& b) {
              if (a.flat != b.flat) return a.flat > b.flat;
              if (a.cum != b.cum) return a.cum > b.cum;
              return names.Name(a.name) < names.Name(b.name);
            });
  return sorted;
}

std::string Percent(int64_t value, int64_t total) {
  return absl::StrFormat("%.2f%%", 100.0 * Share(value, total));
}

// `limit` rows (all when negative) in `go tool pprof -top`'s layout.
std::string TopTable(const std::vector<TopRow>& sorted, const NameTable& names,
                     int64_t grand_total, const TypeAndUnit& type, int limit) {
  const size_t shown =
      limit < 0 ? sorted.size()
                : std::min(sorted.size(), static_cast<size_t>(limit));
  int64_t shown_flat = 0;
  for (size_t i = 0; i < shown; ++i) shown_flat += sorted[i].flat;

  std::string out = absl::StrCat("Type: ", type.type, "\n");
  absl::StrAppend(&out, "Showing nodes accounting for ",
                  FormatValue(shown_flat, type.unit), ", ",
                  Percent(shown_flat, grand_total), " of ",
                  FormatValue(grand_total, type.unit), " total\n");
  if (shown < sorted.size()) {
    absl::StrAppend(&out, "Showing top ", shown, " nodes out of ",
                    sorted.size(), "\n");
  }
  absl::StrAppendFormat(&out, "%10s %7s %7s %10s %7s\n", "flat", "flat%",
                        "sum%", "cum", "cum%");
  int64_t running = 0;
  for (size_t i = 0; i < shown; ++i) {
    const TopRow& row = sorted[i];
    running += row.flat;
    absl::StrAppendFormat(
        &out, "%10s %7s %7s %10s %7s  %s\n", FormatValue(row.flat, type.unit),
        Percent(row.flat, grand_total), Percent(running, grand_total),
        FormatValue(row.cum, type.unit), Percent(row.cum, grand_total),
        names.Name(row.name));
  }
  return out;
}

// The `count` functions with the largest flat values (above zero), as
// "flat%  short name". Functions whose short names are the same (two
// instantiations of one template) are one, as in a flame graph tool that
// elides them.
std::vector<std::string> Hottest(const std::vector<TopRow>& rows,
                                 const NameTable& names, int64_t grand_total,
                                 int count) {
  if (count <= 0) return {};
  std::vector<std::pair<std::string, int64_t>> merged;
  absl::flat_hash_map<std::string, size_t> index;
  for (const TopRow& row : rows) {
    if (row.flat <= 0) break;  // sorted by flat
    auto [it, inserted] =
        index.try_emplace(ShortFunctionName(names.Name(row.name)), 0);
    if (inserted) {
      it->second = merged.size();
      merged.emplace_back(it->first, 0);
    }
    merged[it->second].second += row.flat;
  }
  std::stable_sort(
      merged.begin(), merged.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> lines;
  for (const auto& [name, flat] : merged) {
    if (static_cast<int>(lines.size()) >= count) break;
    lines.push_back(
        absl::StrFormat("%5.1f%%  %s", 100.0 * Share(flat, grand_total), name));
  }
  return lines;
}

}  // namespace

std::vector<FlameGraphNode> BuildFlameGraphTree(const Profile& profile,
                                                int sample_index) {
  NameTable names;
  CallTree tree(profile, sample_index, &names);
  return Flatten(tree, nullptr, names, tree.size());
}

std::vector<FlameGraphNode> BuildDiffFlameGraphTree(const Profile& base,
                                                    const Profile& target,
                                                    int sample_index) {
  NameTable names;
  CallTree base_tree(base, sample_index, &names);
  CallTree target_tree(target, sample_index, &names);
  return Flatten(target_tree, &base_tree, names, target_tree.size());
}

std::string RenderFlameGraphHtml(const Profile& profile, int sample_index,
                                 const std::string& title) {
  return Page(title,
              TreeJson(BuildFlameGraphTree(profile, sample_index),
                       /*diff=*/false, title, SampleType(profile, sample_index),
                       /*base_total=*/0));
}

std::string RenderDiffFlameGraphHtml(const Profile& base, const Profile& target,
                                     int sample_index,
                                     const std::string& title) {
  std::vector<FlameGraphNode> nodes =
      BuildDiffFlameGraphTree(base, target, sample_index);
  return Page(title, TreeJson(nodes, /*diff=*/true, title,
                              SampleType(target, sample_index),
                              /*base_total=*/nodes[0].base_total));
}

std::string RenderTopTable(const Profile& profile, int sample_index,
                           int limit) {
  NameTable names;
  CallTree tree(profile, sample_index, &names);
  return TopTable(TopRows(tree, names), names, tree.root().total,
                  SampleType(profile, sample_index), limit);
}

FlameGraphAndTop RenderFlameGraphAndTopTable(const Profile& profile,
                                             int sample_index,
                                             const std::string& title,
                                             int limit, int hottest) {
  NameTable names;
  CallTree tree(profile, sample_index, &names);
  const TypeAndUnit type = SampleType(profile, sample_index);
  const std::vector<TopRow> rows = TopRows(tree, names);
  const int64_t total = tree.root().total;
  FlameGraphAndTop out;
  out.top_table = TopTable(rows, names, total, type, limit);
  out.total = FormatValue(total, type.unit);
  out.hottest = Hottest(rows, names, total, hottest);
  std::vector<int> name_ids;
  const std::vector<FlameGraphNode> nodes =
      Flatten(tree, nullptr, names, tree.size(), &name_ids);
  out.html = Page(
      title, TreeJsonOfIds(nodes, names, std::move(name_ids), title, type));
  return out;
}

}  // namespace collector
}  // namespace ringprof
