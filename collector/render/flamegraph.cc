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
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Location;
using perftools::profiles::Mapping;
using perftools::profiles::Profile;
using perftools::profiles::Sample;

constexpr double kPruneFraction = 1e-4;  // 0.01% of the root's total

// Function names to small integers, shared by every tree of one rendering so
// a diff can match frames by id.
class NameTable {
 public:
  int Intern(const std::string& name) {
    auto [it, inserted] = ids_.try_emplace(name, names_.size());
    if (inserted) names_.push_back(name);
    return it->second;
  }
  const std::string& Name(int id) const { return names_[id]; }

 private:
  absl::flat_hash_map<std::string, int> ids_;
  std::vector<std::string> names_;
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
          names_->Intern(absl::StrFormat("[location %d]", location_id)));
      return frames;
    }
    const Location& loc = *location->second;
    for (int i = loc.line_size() - 1; i >= 0; --i) {
      auto function = function_names_.find(loc.line(i).function_id());
      if (function != function_names_.end() && !function->second->empty()) {
        frames.push_back(names_->Intern(*function->second));
      }
    }
    if (frames.empty()) frames.push_back(names_->Intern(AddressName(loc)));
    return frames;
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
    absl::flat_hash_map<int, int> children;  // name id -> node index
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

  // The child of `node` named `name`, or -1.
  int FindChild(int node, int name) const {
    if (node < 0) return -1;
    auto it = nodes_[node].children.find(name);
    return it == nodes_[node].children.end() ? -1 : it->second;
  }

 private:
  int Child(int node, int name) {
    auto it = nodes_[node].children.find(name);
    if (it != nodes_[node].children.end()) return it->second;
    int child = static_cast<int>(nodes_.size());
    nodes_[node].children.emplace(name, child);
    nodes_.emplace_back();
    nodes_[child].name = name;
    return child;
  }

  std::vector<Node> nodes_;
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
// gets the values of the same call path in `base` and its diff colour.
std::vector<FlameGraphNode> Flatten(const CallTree& tree, const CallTree* base,
                                    const NameTable& names, size_t node_count) {
  const int64_t threshold = PruneThreshold(tree, node_count);
  std::vector<FlameGraphNode> out;
  struct Pending {
    int node;
    int base_node;
    int parent;
    int depth;
  };
  std::vector<Pending> stack = {{0, base != nullptr ? 0 : -1, -1, 0}};
  std::vector<std::pair<const std::string*, int>> children;
  while (!stack.empty()) {
    Pending pending = stack.back();
    stack.pop_back();
    const CallTree::Node& node = tree.node(pending.node);
    const int index = static_cast<int>(out.size());
    FlameGraphNode& flat = out.emplace_back();
    flat.parent = pending.parent;
    flat.depth = pending.depth;
    flat.function = names.Name(node.name);
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
    for (const auto& [name, child] : node.children) {
      if (tree.node(child).total >= threshold) {
        children.emplace_back(&names.Name(name), child);
      }
    }
    // Pushed in reverse name order so they pop (and appear) sorted.
    std::sort(children.begin(), children.end(),
              [](const auto& a, const auto& b) { return *a.first > *b.first; });
    for (const auto& [name, child] : children) {
      int base_child = base != nullptr ? base->FindChild(pending.base_node,
                                                         tree.node(child).name)
                                       : -1;
      stack.push_back({child, base_child, index, pending.depth + 1});
    }
  }
  return out;
}

size_t CountNodes(const CallTree& tree) {
  size_t count = 0;
  std::vector<int> stack = {0};
  while (!stack.empty()) {
    int node = stack.back();
    stack.pop_back();
    ++count;
    for (const auto& [name, child] : tree.node(node).children) {
      stack.push_back(child);
    }
  }
  return count;
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

// Length of the valid UTF-8 sequence at text[i], or 0 when it is invalid.
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  size_t length = lead < 0xc2   ? 0
                  : lead < 0xe0 ? 2
                  : lead < 0xf0 ? 3
                  : lead < 0xf5 ? 4
                                : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  // Overlong 3/4-byte forms, UTF-16 surrogates, code points past U+10FFFF.
  if (lead == 0xe0 && byte(i + 1) < 0xa0) return 0;
  if (lead == 0xed && byte(i + 1) >= 0xa0) return 0;
  if (lead == 0xf0 && byte(i + 1) < 0x90) return 0;
  if (lead == 0xf4 && byte(i + 1) >= 0x90) return 0;
  return length;
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

std::string TreeJson(const std::vector<FlameGraphNode>& nodes, bool diff,
                     const std::string& title, const TypeAndUnit& type,
                     int64_t base_total) {
  NameTable names;
  std::vector<int> name_ids;
  name_ids.reserve(nodes.size());
  for (const FlameGraphNode& node : nodes) {
    name_ids.push_back(names.Intern(node.function));
  }
  std::string json = "{\"title\":";
  AppendJsonString(title, &json);
  json += ",\"type\":";
  AppendJsonString(type.type, &json);
  json += ",\"unit\":";
  AppendJsonString(type.unit, &json);
  absl::StrAppend(&json, ",\"diff\":", diff ? "true" : "false",
                  ",\"baseTotal\":", base_total, ",\n\"names\":[");
  int name_count = 0;
  for (int id : name_ids) name_count = std::max(name_count, id + 1);
  for (int id = 0; id < name_count; ++id) {
    if (id > 0) json += ",\n";
    AppendJsonString(names.Name(id), &json);
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

constexpr char kPageHead[] = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>)html";

constexpr char kPageBody[] = R"html(</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 0; padding: 8px 12px; color: #222; }
h1 { font-size: 16px; margin: 0 0 2px; word-break: break-all; }
#info { color: #555; margin-bottom: 6px; }
#controls { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; flex-wrap: wrap; }
#search { width: 320px; }
#match { color: #a0a; }
#legend span { display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 2px; }
canvas { display: block; width: 100%; cursor: pointer; }
#tip { position: fixed; pointer-events: none; display: none; max-width: 640px;
  background: #fffbe8; border: 1px solid #999; padding: 4px 6px; font: 12px monospace;
  white-space: pre-wrap; word-break: break-all; box-shadow: 0 1px 4px rgba(0,0,0,.3); }
</style>
</head>
<body>
<h1 id="title"></h1>
<div id="info"></div>
<div id="controls">
<button id="reset" type="button">Reset zoom</button>
<input id="search" type="search" placeholder="Search functions (substring, case-insensitive)" autocomplete="off">
<span id="match"></span>
<span id="legend"></span>
</div>
<canvas id="chart"></canvas>
<div id="tip"></div>
<noscript>This flame graph needs JavaScript.</noscript>
<script type="application/json" id="flame-data">)html";

constexpr char kPageScript[] = R"html(</script>
<script>
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('flame-data').textContent);
  var names = data.names, raw = data.nodes, n = raw.length;
  var parent = new Int32Array(n), depth = new Int32Array(n);
  var total = new Float64Array(n), self = new Float64Array(n);
  var children = [], maxDepth = 0;
  for (var i = 0; i < n; i++) {
    parent[i] = raw[i][0]; total[i] = raw[i][2]; self[i] = raw[i][3];
    children.push([]);
    if (parent[i] >= 0) { children[parent[i]].push(i); depth[i] = depth[parent[i]] + 1; }
    if (depth[i] > maxDepth) maxDepth = depth[i];
  }
  var rootTotal = n > 0 ? total[0] : 0;
  var ROW = 18, canvas = document.getElementById('chart'), ctx = canvas.getContext('2d');
  var tip = document.getElementById('tip'), search = document.getElementById('search');
  var focus = 0, matched = null, rows = [], charWidth = 7;

  function scaled(v, scales) {
    var a = Math.abs(v), s = scales[scales.length - 1];
    for (var k = 0; k < scales.length; k++) if (a >= scales[k][1]) { s = scales[k]; break; }
    var t = (v / s[1]).toFixed(2);
    if (t.slice(-3) === '.00') t = t.slice(0, -3);
    return t + s[0];
  }
  function fmt(v) {
    if (v === 0) return '0';
    if (data.unit === 'nanoseconds') return scaled(v, [['s', 1e9], ['ms', 1e6], ['us', 1e3], ['ns', 1]]);
    if (data.unit === 'bytes') return scaled(v, [['TB', 1099511627776], ['GB', 1073741824], ['MB', 1048576], ['kB', 1024], ['B', 1]]);
    return String(v);
  }
  function pct(v, of) { return of > 0 ? (100 * v / of).toFixed(2) + '%' : '-'; }
  var nameColors = {};
  function hashColor(name) {
    var c = nameColors[name];
    if (c) return c;
    var h = 0;
    for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) | 0;
    h = h >>> 0;
    c = 'rgb(' + (205 + (h % 50)) + ',' + (80 + ((h >>> 8) % 150)) + ',' + ((h >>> 16) % 55) + ')';
    nameColors[name] = c;
    return c;
  }
  function colorOf(i) {
    if (matched && matched[i]) return '#e040e0';
    if (data.diff) return raw[i][6];
    return hashColor(names[raw[i][1]]);
  }
  function box(i, x, w, dimmed) {
    var y = depth[i] * ROW;
    ctx.globalAlpha = dimmed ? 0.55 : 1;
    ctx.fillStyle = colorOf(i);
    ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
    if (w > 3 * charWidth) {
      var label = names[raw[i][1]], fit = Math.floor((w - 6) / charWidth);
      if (label.length > fit) label = label.slice(0, Math.max(fit - 1, 0)) + '\u2026';
      ctx.fillStyle = '#000';
      ctx.fillText(label, x + 3, y + ROW / 2);
    }
    ctx.globalAlpha = 1;
    rows[depth[i]].push([x, w, i]);
  }
  function render() {
    var width = canvas.clientWidth || 1000, height = (maxDepth + 1) * ROW;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    canvas.style.height = height + 'px';
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = '12px monospace'; ctx.textBaseline = 'middle';
    charWidth = ctx.measureText('M').width || 7;
    rows = [];
    for (var d = 0; d <= maxDepth; d++) rows.push([]);
    if (n === 0) return;
    for (var a = parent[focus]; a >= 0; a = parent[a]) box(a, 0, width, true);
    var scale = total[focus] > 0 ? width / total[focus] : 0;
    var stack = [[focus, 0]];
    while (stack.length) {
      var e = stack.pop(), j = e[0], x = e[1], w = total[j] * scale;
      if (w < 0.3) continue;
      box(j, x, w, false);
      var kids = children[j], offset = x;
      for (var k = 0; k < kids.length; k++) { stack.push([kids[k], offset]); offset += total[kids[k]] * scale; }
    }
  }
  function nodeAt(event) {
    var r = canvas.getBoundingClientRect(), x = event.clientX - r.left;
    var row = rows[Math.floor((event.clientY - r.top) / ROW)];
    if (!row) return -1;
    for (var k = 0; k < row.length; k++) if (x >= row[k][0] && x < row[k][0] + row[k][1]) return row[k][2];
    return -1;
  }
  function describe(i) {
    var lines = [names[raw[i][1]],
      'total: ' + fmt(total[i]) + ' (' + pct(total[i], rootTotal) + ' of all)',
      'self:  ' + fmt(self[i]) + ' (' + pct(self[i], rootTotal) + ' of all)'];
    if (focus !== 0) lines.push('       ' + pct(total[i], total[focus]) + ' of the zoomed frame');
    if (data.diff) {
      var baseShare = data.baseTotal > 0 ? raw[i][4] / data.baseTotal : 0;
      var share = rootTotal > 0 ? total[i] / rootTotal : 0;
      var change = (100 * (share - baseShare)).toFixed(2);
      lines.push('base total: ' + fmt(raw[i][4]) + ' (' + pct(raw[i][4], data.baseTotal) + ' of base)',
                 'base self:  ' + fmt(raw[i][5]) + ' (' + pct(raw[i][5], data.baseTotal) + ' of base)',
                 'share change: ' + (change > 0 ? '+' : '') + change + ' percentage points');
    }
    return lines.join('\n');
  }
  canvas.addEventListener('mousemove', function (event) {
    var i = nodeAt(event);
    if (i < 0) { tip.style.display = 'none'; return; }
    tip.textContent = describe(i);
    tip.style.display = 'block';
    var left = event.clientX + 14, top = event.clientY + 14;
    if (left + tip.offsetWidth > window.innerWidth) left = Math.max(0, event.clientX - tip.offsetWidth - 14);
    if (top + tip.offsetHeight > window.innerHeight) top = Math.max(0, event.clientY - tip.offsetHeight - 14);
    tip.style.left = left + 'px'; tip.style.top = top + 'px';
  });
  canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  canvas.addEventListener('click', function (event) {
    var i = nodeAt(event);
    if (i >= 0) { focus = i; render(); }
  });
  function reset() { focus = 0; render(); }
  document.getElementById('reset').addEventListener('click', reset);
  document.addEventListener('keydown', function (event) { if (event.key === 'Escape') reset(); });
  search.addEventListener('input', function () {
    var query = search.value.toLowerCase(), out = document.getElementById('match');
    if (!query) { matched = null; out.textContent = ''; render(); return; }
    matched = new Uint8Array(n);
    var under = new Uint8Array(n), sum = 0;
    for (var i = 0; i < n; i++) {
      if (parent[i] >= 0) under[i] = under[parent[i]] || matched[parent[i]];
      matched[i] = names[raw[i][1]].toLowerCase().indexOf(query) >= 0 ? 1 : 0;
      if (matched[i] && !under[i]) sum += total[i];  // nested matches count once
    }
    out.textContent = 'matched: ' + fmt(sum) + ' (' + pct(sum, rootTotal) + ' of all)';
    render();
  });
  document.title = data.title;
  document.getElementById('title').textContent = data.title;
  var info = (data.type || 'samples') + (data.unit ? ' (' + data.unit + ')' : '') +
      ' \u00b7 total ' + fmt(rootTotal);
  if (data.diff) info += ' \u00b7 base total ' + fmt(data.baseTotal) +
      ' \u00b7 colour: change in each frame\u2019s share of its profile\u2019s total';
  info += ' \u00b7 click a frame to zoom, Esc or Reset to zoom out';
  document.getElementById('info').textContent = info;
  if (data.diff) {
    var legend = document.getElementById('legend');
    [['grew', '#e83030', '#fff'], ['unchanged', '#d0d0d0', '#000'], ['shrank', '#3060e8', '#fff']].forEach(function (l) {
      var s = document.createElement('span');
      s.textContent = l[0]; s.style.background = l[1]; s.style.color = l[2];
      legend.appendChild(s);
    });
  }
  window.addEventListener('resize', render);
  render();
  // A link can carry a search: page.html#search=Parse
  var preset = /^#search=(.*)$/.exec(window.location.hash);
  if (preset) {
    search.value = decodeURIComponent(preset[1]);
    search.dispatchEvent(new Event('input'));
  }
})();
</script>
</body>
</html>
)html";

std::string Page(const std::string& title, const std::string& json) {
  return absl::StrCat(kPageHead, HtmlEscape(title), kPageBody, json,
                      kPageScript);
}

}  // namespace

std::vector<FlameGraphNode> BuildFlameGraphTree(const Profile& profile,
                                                int sample_index) {
  NameTable names;
  CallTree tree(profile, sample_index, &names);
  return Flatten(tree, nullptr, names, CountNodes(tree));
}

std::vector<FlameGraphNode> BuildDiffFlameGraphTree(const Profile& base,
                                                    const Profile& target,
                                                    int sample_index) {
  NameTable names;
  CallTree base_tree(base, sample_index, &names);
  CallTree target_tree(target, sample_index, &names);
  return Flatten(target_tree, &base_tree, names, CountNodes(target_tree));
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
  StackReader reader(profile, &names);
  const int index = ValueIndex(profile, sample_index);
  const TypeAndUnit type = SampleType(profile, sample_index);

  struct Row {
    int name = 0;
    int64_t flat = 0;
    int64_t cum = 0;
  };
  absl::flat_hash_map<int, Row> rows;
  absl::flat_hash_map<int, size_t> counted_in_sample;  // name -> sample number
  int64_t grand_total = 0;
  std::vector<int> frames;
  size_t sample_number = 0;
  for (const Sample& sample : profile.sample()) {
    ++sample_number;
    int64_t value = SampleValue(sample, index);
    if (value == 0) continue;
    grand_total += value;
    reader.RootFirstFrames(sample, &frames);
    if (frames.empty()) continue;
    for (int name : frames) {
      // Recursion: a function counts once per sample in its cum.
      auto [it, first] = counted_in_sample.try_emplace(name, sample_number);
      if (!first && it->second == sample_number) continue;
      it->second = sample_number;
      Row& row = rows[name];
      row.name = name;
      row.cum += value;
    }
    rows[frames.back()].flat += value;
  }

  std::vector<Row> sorted;
  sorted.reserve(rows.size());
  for (const auto& [name, row] : rows) sorted.push_back(row);
  std::sort(sorted.begin(), sorted.end(), [&](const Row& a, const Row& b) {
    if (a.flat != b.flat) return a.flat > b.flat;
    if (a.cum != b.cum) return a.cum > b.cum;
    return names.Name(a.name) < names.Name(b.name);
  });
  const size_t shown =
      limit < 0 ? sorted.size()
                : std::min(sorted.size(), static_cast<size_t>(limit));
  int64_t shown_flat = 0;
  for (size_t i = 0; i < shown; ++i) shown_flat += sorted[i].flat;

  auto percent = [&](int64_t value) {
    return absl::StrFormat("%.2f%%", 100.0 * Share(value, grand_total));
  };
  std::string out = absl::StrCat("Type: ", type.type, "\n");
  absl::StrAppend(&out, "Showing nodes accounting for ",
                  FormatValue(shown_flat, type.unit), ", ", percent(shown_flat),
                  " of ", FormatValue(grand_total, type.unit), " total\n");
  if (shown < sorted.size()) {
    absl::StrAppend(&out, "Showing top ", shown, " nodes out of ",
                    sorted.size(), "\n");
  }
  absl::StrAppendFormat(&out, "%10s %7s %7s %10s %7s\n", "flat", "flat%",
                        "sum%", "cum", "cum%");
  int64_t running = 0;
  for (size_t i = 0; i < shown; ++i) {
    const Row& row = sorted[i];
    running += row.flat;
    absl::StrAppendFormat(&out, "%10s %7s %7s %10s %7s  %s\n",
                          FormatValue(row.flat, type.unit), percent(row.flat),
                          percent(running), FormatValue(row.cum, type.unit),
                          percent(row.cum), names.Name(row.name));
  }
  return out;
}

}  // namespace collector
}  // namespace ringprof
