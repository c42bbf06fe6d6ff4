// ctest learns the Catch2 cases through catch_discover_tests, which splits a
// name at ',' and ';' and runs each piece as a filter that matches nothing —
// a test that then "passes" without running. Names must avoid the characters
// that Catch2's test specs or CMake lists treat specially.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace {

TEST_CASE("test names are safe for catch_discover_tests") {
  const std::filesystem::path root = std::filesystem::path(WEFT_SOURCE_DIR) / "tests";
  // TEST_CASE("name"...) and TEST_CASE_METHOD(Fixture, "name"...).
  const std::regex test_case(
      R"re(TEST_CASE(?:_METHOD\(\s*[\w:<>]+\s*,|\()\s*((?:"(?:[^"\\]|\\.)*"\s*)+))re");
  const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
  int seen = 0;
  int with_fixture = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".cc") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (auto it = std::sregex_iterator(source.begin(), source.end(), test_case);
         it != std::sregex_iterator(); ++it) {
      std::string literals = (*it)[1].str(), name;
      for (auto l = std::sregex_iterator(literals.begin(), literals.end(), literal);
           l != std::sregex_iterator(); ++l) {
        name += (*l)[1].str();
      }
      ++seen;
      with_fixture += it->str().starts_with("TEST_CASE_METHOD");
      INFO(entry.path().string() << ": \"" << name << "\"");
      CHECK(name.find_first_of(",;[]*~\\\"") == std::string::npos);
    }
  }
  CHECK(seen > 50);
  CHECK(with_fixture > 0);  // the fixture form is looked at too
}

}  // namespace
