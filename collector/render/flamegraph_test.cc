#include "collector/render/flamegraph.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Builds pprof profiles the way the collector does: interned strings, one
// function per name, locations with (possibly inlined) lines.
class ProfileBuilder {
 public:
  ProfileBuilder(const std::string& type, const std::string& unit) {
    String("");
    AddSampleType(type, unit);
  }

  void AddSampleType(const std::string& type, const std::string& unit) {
    auto* sample_type = profile_.add_sample_type();
    sample_type->set_type(String(type));
    sample_type->set_unit(String(unit));
  }

  // A location whose lines are `functions`, innermost inlined first.
  uint64_t Location(const std::vector<std::string>& functions) {
    auto* location = profile_.add_location();
    location->set_id(profile_.location_size());
    for (const std::string& function : functions) {
      location->add_line()->set_function_id(Function(function));
    }
    return location->id();
  }

  // A sample over single-line locations, given root first for readability.
  void Stack(const std::vector<std::string>& root_first,
             const std::vector<int64_t>& values) {
    std::vector<uint64_t> leaf_first;
    for (auto it = root_first.rbegin(); it != root_first.rend(); ++it) {
      leaf_first.push_back(Location({*it}));
    }
    Sample(leaf_first, values);
  }

  void Sample(const std::vector<uint64_t>& leaf_first_locations,
              const std::vector<int64_t>& values) {
    auto* sample = profile_.add_sample();
    for (uint64_t id : leaf_first_locations) sample->add_location_id(id);
    for (int64_t value : values) sample->add_value(value);
  }

  uint64_t Mapping(const std::string& file, uint64_t start, uint64_t offset) {
    auto* mapping = profile_.add_mapping();
    mapping->set_id(profile_.mapping_size());
    mapping->set_memory_start(start);
    mapping->set_memory_limit(start + 0x100000);
    mapping->set_file_offset(offset);
    mapping->set_filename(String(file));
    return mapping->id();
  }

  uint64_t UnsymbolizedLocation(uint64_t mapping, uint64_t address) {
    auto* location = profile_.add_location();
    location->set_id(profile_.location_size());
    location->set_mapping_id(mapping);
    location->set_address(address);
    return location->id();
  }

  const Profile& profile() const { return profile_; }

 private:
  int64_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, profile_.string_table_size());
    if (inserted) profile_.add_string_table(s);
    return it->second;
  }

  uint64_t Function(const std::string& name) {
    auto [it, inserted] =
        functions_.try_emplace(name, profile_.function_size() + 1);
    if (inserted) {
      auto* function = profile_.add_function();
      function->set_id(it->second);
      function->set_name(String(name));
    }
    return it->second;
  }

  Profile profile_;
  absl::flat_hash_map<std::string, int64_t> strings_;
  absl::flat_hash_map<std::string, uint64_t> functions_;
};

// "function:total/self" per node, in pre-order, indented by depth.
std::vector<std::string> Describe(const std::vector<FlameGraphNode>& nodes) {
  std::vector<std::string> out;
  for (const FlameGraphNode& node : nodes) {
    out.push_back(std::string(2 * node.depth, ' ') + node.function + ":" +
                  std::to_string(node.total) + "/" + std::to_string(node.self));
  }
  return out;
}

TEST(FlameGraphTreeTest, TotalsSelfValuesAndNameOrder) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main", "a", "b"}, {10});
  builder.Stack({"main", "a"}, {5});
  builder.Stack({"main", "c"}, {3});
  builder.Stack({"main", "a", "b"}, {2});
  std::vector<FlameGraphNode> tree = BuildFlameGraphTree(builder.profile(), 0);
  EXPECT_THAT(Describe(tree),
              ElementsAre("all:20/0", "  main:20/0", "    a:17/5",
                          "      b:12/12", "    c:3/3"));
  EXPECT_EQ(tree[0].parent, -1);
  EXPECT_EQ(tree[2].parent, 1);
  EXPECT_EQ(tree[3].parent, 2);
  EXPECT_EQ(tree[4].parent, 1);
}

TEST(FlameGraphTreeTest, InlinedLinesBecomeFrames) {
  ProfileBuilder builder("alloc_space", "bytes");
  uint64_t leaf =
      builder.Location({"inlined_inner", "inlined_middle", "physical"});
  uint64_t caller = builder.Location({"main"});
  builder.Sample({leaf, caller}, {64});
  EXPECT_THAT(
      Describe(BuildFlameGraphTree(builder.profile(), 0)),
      ElementsAre("all:64/0", "  main:64/0", "    physical:64/0",
                  "      inlined_middle:64/0", "        inlined_inner:64/64"));
}

TEST(FlameGraphTreeTest, UnsymbolizedLocationsShowModuleAndFileOffset) {
  ProfileBuilder builder("cpu", "nanoseconds");
  uint64_t mapping =
      builder.Mapping("/usr/lib/libfoo.so", 0x7f0000000000, 0x1000);
  uint64_t location = builder.UnsymbolizedLocation(mapping, 0x7f0000000234);
  builder.Sample({location, builder.Location({"main"})}, {1});
  EXPECT_THAT(Describe(BuildFlameGraphTree(builder.profile(), 0)),
              ElementsAre("all:1/0", "  main:1/0", "    libfoo.so+0x1234:1/1"));
}

TEST(FlameGraphTreeTest, SelectsTheValueAndDefaultsToTheLast) {
  ProfileBuilder builder("alloc_objects", "count");
  builder.AddSampleType("alloc_space", "bytes");
  builder.Stack({"main", "f"}, {2, 4096});
  EXPECT_EQ(BuildFlameGraphTree(builder.profile(), 0)[0].total, 2);
  EXPECT_EQ(BuildFlameGraphTree(builder.profile(), 1)[0].total, 4096);
  EXPECT_EQ(BuildFlameGraphTree(builder.profile(), 7)[0].total, 4096);
  EXPECT_EQ(BuildFlameGraphTree(builder.profile(), -1)[0].total, 4096);
}

TEST(FlameGraphTreeTest, PrunesFramesBelowOneTenThousandthIntoTheirParent) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main", "big"}, {99990});
  builder.Stack({"main", "tiny"}, {9});    // 0.009%: pruned
  builder.Stack({"main", "small"}, {10});  // 0.0099...%: pruned
  builder.Stack({"main", "kept"}, {11});   // >= ceil(10.001): kept
  std::vector<FlameGraphNode> tree = BuildFlameGraphTree(builder.profile(), 0);
  EXPECT_THAT(Describe(tree),
              ElementsAre("all:100020/0", "  main:100020/0",
                          "    big:99990/99990", "    kept:11/11"));
}

TEST(FlameGraphTreeTest, BoundsTheNodeCountKeepingTheHeaviestPaths) {
  ProfileBuilder builder("cpu", "nanoseconds");
  // 300 chains of 250 distinct frames: 75,000 frames, all above 0.01%.
  for (int chain = 0; chain < 300; ++chain) {
    std::vector<std::string> stack;
    for (int depth = 0; depth < 250; ++depth) {
      stack.push_back("chain" + std::to_string(chain) + "_" +
                      std::to_string(depth));
    }
    builder.Stack(stack, {1000 + chain});
  }
  std::vector<FlameGraphNode> tree = BuildFlameGraphTree(builder.profile(), 0);
  EXPECT_LE(tree.size(), static_cast<size_t>(kMaxFlameGraphNodes));
  EXPECT_GT(tree.size(), static_cast<size_t>(kMaxFlameGraphNodes) / 2);
  EXPECT_EQ(tree[0].total, 300 * 1000 + 299 * 300 / 2);
  for (size_t i = 1; i < tree.size(); ++i) {
    ASSERT_LT(tree[i].parent, static_cast<int>(i));
    // The heaviest chain survives, the lightest does not.
    EXPECT_THAT(tree[i].function, Not(HasSubstr("chain0_")));
  }
  bool heaviest_leaf_kept = false;
  for (const FlameGraphNode& node : tree) {
    heaviest_leaf_kept |= node.function == "chain299_249";
  }
  EXPECT_TRUE(heaviest_leaf_kept);
  // The page stays a size a browser opens quickly.
  std::string html = RenderFlameGraphHtml(builder.profile(), 0, "big");
  EXPECT_LT(html.size(), 4u << 20);
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    std::ofstream(std::string(dir) + "/big.html") << html;
  }
}

int CountOccurrences(absl::string_view haystack, absl::string_view needle) {
  int count = 0;
  for (size_t at = haystack.find(needle); at != absl::string_view::npos;
       at = haystack.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(FlameGraphHtmlTest, EscapesEveryString) {
  const std::string hostile =
      "std::vector<int, std::allocator<int> >::operator<(A&, \"B\")"
      "</script><script>alert(1)</script>";
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main", hostile}, {30000000});
  std::string html =
      RenderFlameGraphHtml(builder.profile(), 0, "run <b>&'\"</b>");
  // Our own two script elements close; nothing in the data does.
  EXPECT_EQ(CountOccurrences(html, "</script>"), 2);
  EXPECT_THAT(html, Not(HasSubstr("alert(1)</")));
  EXPECT_THAT(html, Not(HasSubstr("<b>")));
  EXPECT_THAT(html, HasSubstr("<title>run &lt;b&gt;&amp;&#39;&quot;&lt;/b&gt;"
                              "</title>"));
  EXPECT_THAT(
      html, HasSubstr("\"std::vector\\u003cint, std::allocator\\u003cint\\u003e"
                      " \\u003e::operator\\u003c(A\\u0026, \\\"B\\\")"
                      "\\u003c/script\\u003e"));
  EXPECT_THAT(html, HasSubstr("\"main\""));
  EXPECT_THAT(html, HasSubstr("\"type\":\"cpu\",\"unit\":\"nanoseconds\""));
}

TEST(FlameGraphHtmlTest, ReplacesInvalidUtf8AndKeepsValidUtf8) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"bad\xff\xc3name", "caf\xc3\xa9", "line\xe2\x80\xa8sep"}, {1});
  std::string html = RenderFlameGraphHtml(builder.profile(), 0, "t");
  EXPECT_THAT(html, HasSubstr("\"bad\\ufffd\\ufffdname\""));
  EXPECT_THAT(html, HasSubstr("\"caf\xc3\xa9\""));
  EXPECT_THAT(html, HasSubstr("\"line\\u2028sep\""));
}

TEST(FlameGraphHtmlTest, SelfContained) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main"}, {1});
  std::string html = RenderFlameGraphHtml(builder.profile(), 0, "t");
  EXPECT_THAT(html, Not(HasSubstr("://")));
  EXPECT_THAT(html, Not(HasSubstr(" src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, HasSubstr("default-src 'none'"));
}

TEST(DiffFlameGraphTest, ColoursByChangeInNormalisedShare) {
  ProfileBuilder base("cpu", "nanoseconds");
  base.Stack({"main", "grew"}, {50});
  base.Stack({"main", "shrank"}, {50});
  // Ten times the total: only shares matter.
  ProfileBuilder target("cpu", "nanoseconds");
  target.Stack({"main", "grew"}, {800});
  target.Stack({"main", "shrank"}, {200});
  target.Stack({"main", "new"}, {0});  // a zero value adds no frame

  std::vector<FlameGraphNode> tree =
      BuildDiffFlameGraphTree(base.profile(), target.profile(), 0);
  ASSERT_THAT(Describe(tree),
              ElementsAre("all:1000/0", "  main:1000/0", "    grew:800/800",
                          "    shrank:200/200"));
  EXPECT_EQ(tree[0].base_total, 100);
  EXPECT_EQ(tree[2].base_total, 50);
  EXPECT_EQ(tree[3].base_self, 50);

  auto rgb = [](const std::string& color) {
    EXPECT_EQ(color.size(), 7u);
    return std::vector<int>{std::stoi(color.substr(1, 2), nullptr, 16),
                            std::stoi(color.substr(3, 2), nullptr, 16),
                            std::stoi(color.substr(5, 2), nullptr, 16)};
  };
  std::vector<int> unchanged = rgb(tree[1].color);
  std::vector<int> grew = rgb(tree[2].color);
  std::vector<int> shrank = rgb(tree[3].color);
  EXPECT_EQ(unchanged[0], unchanged[2]) << tree[1].color;
  EXPECT_GT(grew[0], grew[2] + 80) << tree[2].color;
  EXPECT_GT(shrank[2], shrank[0] + 80) << tree[3].color;
  // "shrank" lost more of its share (0.5 -> 0.2) than "grew" gained
  // (0.5 -> 0.8) relative to the larger share, so it is more saturated.
  EXPECT_GT(shrank[2] - shrank[0], grew[0] - grew[2]);

  std::string html =
      RenderDiffFlameGraphHtml(base.profile(), target.profile(), 0, "diff");
  EXPECT_THAT(html, HasSubstr("\"diff\":true,\"baseTotal\":100"));
  EXPECT_THAT(html, HasSubstr(",50,50,\"" + tree[2].color + "\"]"));
  EXPECT_THAT(html, HasSubstr(",50,50,\"" + tree[3].color + "\"]"));
}

TEST(DiffFlameGraphTest, FramesAbsentFromBaseAreFullyRed) {
  ProfileBuilder base("cpu", "nanoseconds");
  base.Stack({"main"}, {10});
  ProfileBuilder target("cpu", "nanoseconds");
  target.Stack({"main", "fresh"}, {10});
  std::vector<FlameGraphNode> tree =
      BuildDiffFlameGraphTree(base.profile(), target.profile(), 0);
  ASSERT_EQ(tree.size(), 3u);
  EXPECT_EQ(tree[2].function, "fresh");
  EXPECT_EQ(tree[2].base_total, 0);
  EXPECT_EQ(tree[2].color, "#e83030");
}

// A CPU profile shaped like a real C++ program, for looking at the pages:
// they are written to $TEST_UNDECLARED_OUTPUTS_DIR (bazel-testlogs/collector/
// flamegraph_test/test.outputs/) as flame.html and diff.html (and the
// 50,000-frame page as big.html).
Profile ExampleProfile(int parse_weight) {
  ProfileBuilder builder("cpu", "nanoseconds");
  const std::string parse =
      "std::vector<Token, std::allocator<Token> > app::Parse<Json>(Reader&)";
  uint64_t inlined = builder.Location({"app::Lexer::Next() [inlined]", parse});
  uint64_t main = builder.Location({"main"});
  uint64_t start = builder.Location({"__libc_start_main"});
  builder.Sample({inlined, main, start}, {parse_weight * 10000000});
  builder.Stack({"__libc_start_main", "main", parse,
                 "operator new(unsigned long)", "malloc"},
                {20000000});
  builder.Stack({"__libc_start_main", "main", "app::Render(Page const&)"},
                {30000000});
  builder.Stack({"__libc_start_main", "main", "app::Render(Page const&)",
                 "app::Escape<char>(std::basic_string_view<char>)"},
                {15000000});
  builder.Stack({"__libc_start_main", "main", "app::Flush()", "write"},
                {5000000});
  return builder.profile();
}

TEST(FlameGraphHtmlTest, ExamplePagesNameTheirFunctions) {
  Profile base = ExampleProfile(4);
  Profile target = ExampleProfile(9);
  std::string flame = RenderFlameGraphHtml(target, 0, "example: cpu");
  std::string diff = RenderDiffFlameGraphHtml(base, target, 0, "example diff");
  for (const std::string* page : {&flame, &diff}) {
    EXPECT_THAT(*page, HasSubstr("\"app::Render(Page const\\u0026)\""));
    EXPECT_THAT(*page, HasSubstr("\"app::Lexer::Next() [inlined]\""));
  }
  if (const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    for (const auto& [name, page] :
         {std::pair<std::string, const std::string*>{"flame.html", &flame},
          {"diff.html", &diff}}) {
      std::ofstream out(std::string(dir) + "/" + name);
      out << *page;
      EXPECT_TRUE(out.good()) << name;
    }
  }
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(TopTableTest, SortedByFlatWithPercentagesLikePprof) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main", "a", "b"}, {60000000});
  builder.Stack({"main", "a"}, {20000000});
  builder.Stack({"main", "c"}, {10000000});
  // Recursion counts once in cum.
  builder.Stack({"main", "a", "a"}, {10000000});
  std::vector<std::string> lines =
      Lines(RenderTopTable(builder.profile(), 0, 10));
  EXPECT_THAT(
      lines,
      ElementsAre("Type: cpu",
                  "Showing nodes accounting for 100ms, 100.00% of 100ms total",
                  "      flat   flat%    sum%        cum    cum%",
                  "      60ms  60.00%  60.00%       60ms  60.00%  b",
                  "      30ms  30.00%  90.00%       90ms  90.00%  a",
                  "      10ms  10.00% 100.00%       10ms  10.00%  c",
                  "         0   0.00% 100.00%      100ms 100.00%  main"));
}

TEST(TopTableTest, IndirectRecursionCountsOnceInCum) {
  ProfileBuilder builder("cpu", "nanoseconds");
  builder.Stack({"main", "a", "b", "a", "b"}, {30000000});
  builder.Stack({"main", "b", "a"}, {10000000});
  std::vector<std::string> lines =
      Lines(RenderTopTable(builder.profile(), 0, 10));
  EXPECT_THAT(
      lines,
      ElementsAre("Type: cpu",
                  "Showing nodes accounting for 40ms, 100.00% of 40ms total",
                  "      flat   flat%    sum%        cum    cum%",
                  "      30ms  75.00%  75.00%       40ms 100.00%  b",
                  "      10ms  25.00% 100.00%       40ms 100.00%  a",
                  "         0   0.00% 100.00%       40ms 100.00%  main"));
}

TEST(TopTableTest, TheCombinedRenderingIsBothRenderings) {
  ProfileBuilder builder("alloc_objects", "count");
  builder.AddSampleType("alloc_space", "bytes");
  // "z" is met first but drawn last: the page numbers names as drawn.
  builder.Stack({"main", "z"}, {1, 10});
  builder.Stack({"main", "a", "b"}, {3, 3000});
  builder.Stack({"main", "a"}, {2, 1536});
  builder.Stack({"main", "c", "a"}, {1, 100});
  for (int index : {0, 1}) {
    const FlameGraphAndTop both =
        RenderFlameGraphAndTopTable(builder.profile(), index, "t", 2);
    EXPECT_EQ(both.html, RenderFlameGraphHtml(builder.profile(), index, "t"));
    EXPECT_EQ(both.top_table, RenderTopTable(builder.profile(), index, 2));
  }
}

TEST(TopTableTest, HottestFunctionsAtAGlance) {
  ProfileBuilder builder("alloc_space", "bytes");
  // Two instantiations of one template: one line, as a flame graph tool
  // eliding template arguments shows them.
  builder.Stack({"main",
                 "std::__new_allocator<Json>::allocate(unsigned long, "
                 "void const*)"},
                {400 << 20});
  builder.Stack({"main",
                 "std::__new_allocator<std::pair<int, int> >::"
                 "allocate(unsigned long, void const*)"},
                {200 << 20});
  builder.Stack({"main", "Parse(char const*) [clone .isra.0]"}, {500 << 20});
  builder.Stack({"main", "tiny"}, {1 << 20});
  builder.Stack({"main"}, {1 << 20});
  const FlameGraphAndTop both =
      RenderFlameGraphAndTopTable(builder.profile(), 0, "t", 10, 2);
  EXPECT_EQ(both.total, "1.08GB");
  EXPECT_THAT(both.hottest, ElementsAre(" 54.4%  std::__new_allocator<…>::"
                                        "allocate",
                                        " 45.4%  Parse"));
  // The top table keeps every name whole.
  EXPECT_THAT(both.top_table,
              HasSubstr("std::__new_allocator<std::pair<int, int> >::allocate("
                        "unsigned long, void const*)"));
  EXPECT_THAT(
      RenderFlameGraphAndTopTable(builder.profile(), 0, "t", 10, 9).hottest,
      ::testing::SizeIs(4));  // functions with a flat value only
  EXPECT_THAT(
      RenderFlameGraphAndTopTable(builder.profile(), 0, "t", 10).hottest,
      ::testing::IsEmpty());
}

TEST(TopTableTest, LimitAndByteUnits) {
  ProfileBuilder builder("alloc_objects", "count");
  builder.AddSampleType("alloc_space", "bytes");
  builder.Stack({"main", "big"}, {3, 3 * 1048576});
  builder.Stack({"main", "medium"}, {2, 1536});
  builder.Stack({"main", "small"}, {1, 100});
  std::vector<std::string> lines =
      Lines(RenderTopTable(builder.profile(), 1, 2));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "Type: alloc_space");
  EXPECT_EQ(lines[1], "Showing nodes accounting for 3MB, 100.00% of 3MB total");
  EXPECT_EQ(lines[2], "Showing top 2 nodes out of 4");
  EXPECT_EQ(lines[4], "       3MB  99.95%  99.95%        3MB  99.95%  big");
  EXPECT_EQ(lines[5], "    1.50kB   0.05% 100.00%     1.50kB   0.05%  medium");
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
