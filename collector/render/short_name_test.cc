#include "collector/render/short_name.h"

#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(ShortFunctionNameTest, ElidesTemplateArgumentsAndParameters) {
  EXPECT_EQ(ShortFunctionName(
                "std::__cxx11::basic_string<char, std::char_traits<char>, "
                "std::allocator<char> >::_M_construct<char const*>(char "
                "const*, char const*, std::forward_iterator_tag) [clone "
                ".isra.0]"),
            "std::__cxx11::basic_string<…>::_M_construct<…>");
  EXPECT_EQ(ShortFunctionName("std::vector<int, std::allocator<int> >::"
                              "push_back(int const&)"),
            "std::vector<…>::push_back");
  EXPECT_EQ(ShortFunctionName("std::__new_allocator<ringprof::examples::"
                              "JsonValue>::allocate(unsigned long, void "
                              "const*)"),
            "std::__new_allocator<…>::allocate");
  EXPECT_EQ(ShortFunctionName("std::thread::join()"), "std::thread::join");
  EXPECT_EQ(ShortFunctionName("Foo::Get() const &"), "Foo::Get");
}

TEST(ShortFunctionNameTest, DropsTheReturnTypeOfTemplateFunctions) {
  EXPECT_EQ(
      ShortFunctionName(
          "void std::condition_variable::wait<ringprof::examples::"
          "BoundedQueue<std::vector<int, std::allocator<int> > >::Pop()::"
          "{lambda()#1}>(std::unique_lock<std::mutex>&, ringprof::examples::"
          "BoundedQueue<std::vector<int, std::allocator<int> > >::Pop()::"
          "{lambda()#1})"),
      "std::condition_variable::wait<…>");
  EXPECT_EQ(ShortFunctionName("int ns::Max<int>(int, int)"), "ns::Max<…>");
  // Without a scope after it, a space is part of the name.
  EXPECT_EQ(ShortFunctionName("operator new(unsigned long)"), "operator new");
}

TEST(ShortFunctionNameTest, KeepsScopesInParenthesesAndBraces) {
  EXPECT_EQ(ShortFunctionName("ringprof::examples::(anonymous namespace)::"
                              "Parser::ParseString(std::__cxx11::basic_string"
                              "<char, std::char_traits<char>, std::allocator"
                              "<char> >*) [clone .constprop.0]"),
            "ringprof::examples::(anonymous namespace)::Parser::ParseString");
  EXPECT_EQ(ShortFunctionName("Queue<int>::Push(std::vector<int, std::"
                              "allocator<int> >)::{lambda(std::pair<int, "
                              "int>)#1}::operator()(std::pair<int, int>) "
                              "const"),
            "Queue<…>::Push(std::vector<…>)::{lambda(std::pair<…>)#1}::"
            "operator()");
}

TEST(ShortFunctionNameTest, KeepsOperators) {
  EXPECT_EQ(ShortFunctionName("std::basic_ostream<char, std::char_traits<char>"
                              " >& std::operator<< <std::char_traits<char> >"
                              "(std::basic_ostream<char, std::char_traits<char>"
                              " >&, char const*)"),
            "std::operator<< <…>");
  EXPECT_EQ(ShortFunctionName("Point::operator<(Point const&) const"),
            "Point::operator<");
  EXPECT_EQ(ShortFunctionName("Matrix::operator[](unsigned long)"),
            "Matrix::operator[]");
  EXPECT_EQ(ShortFunctionName("Arena::operator delete[](void*)"),
            "Arena::operator delete[]");
  EXPECT_EQ(ShortFunctionName("Less::operator()(int, int) const"),
            "Less::operator()");
  EXPECT_EQ(ShortFunctionName("Ptr::operator->() const"), "Ptr::operator->");
  // An identifier that merely starts with the word.
  EXPECT_EQ(ShortFunctionName("operators::apply<int>(int)"),
            "operators::apply<…>");
}

TEST(ShortFunctionNameTest, KeepsRustPaths) {
  EXPECT_EQ(ShortFunctionName("<[A] as core::cmp::PartialEq<[B]>>::eq"),
            "<[A] as core::cmp::PartialEq<…>>::eq");
  EXPECT_EQ(ShortFunctionName("<alloc::vec::Vec<T,A> as core::ops::drop::"
                              "Drop>::drop"),
            "<alloc::vec::Vec<…> as core::ops::drop::Drop>::drop");
  EXPECT_EQ(ShortFunctionName("core::ptr::drop_in_place<alloc::vec::Vec<u8>>"),
            "core::ptr::drop_in_place<…>");
  EXPECT_EQ(ShortFunctionName("main::churn_map"), "main::churn_map");
}

TEST(ShortFunctionNameTest, LeavesOtherNamesAlone) {
  for (const char* name :
       {"", "main", "__memcpy_avx_unaligned_erms", "[libc.so.6] 0x1230",
        "hotloop+0x1234", "[lost]", "[thread not sampled]", "0x7f00",
        "foo[abi:cxx11]"}) {
    EXPECT_EQ(ShortFunctionName(name), name);
  }
}

TEST(ShortFunctionNameTest, SurvivesBrokenAndDeepNames) {
  EXPECT_EQ(ShortFunctionName("f<int"), "f<…>");
  EXPECT_EQ(ShortFunctionName("f(int"), "f");
  EXPECT_EQ(ShortFunctionName("a>b)c}"), "a>b)c}");
  EXPECT_EQ(ShortFunctionName("{{{"), "{{{");
  EXPECT_EQ(ShortFunctionName("(("), "((");
  // Deeply nested scopes: bounded recursion, nothing lost.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "(";
  deep += "x";
  for (int i = 0; i < 100000; ++i) deep += ")";
  deep += "::f(int)";
  const std::string shortened = ShortFunctionName(deep);
  EXPECT_EQ(shortened, deep.substr(0, deep.size() - 5));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
