#include "tools/server/model_router.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gemlet::server {
namespace model_router_test {

// A loaded model that only knows its id (the pool never calls handlers()).
class FakeModel : public LoadedModel {
 public:
  explicit FakeModel(std::string id) : id(std::move(id)) {}
  ApiHandlers& handlers() override { std::abort(); }
  void Drain(std::chrono::milliseconds) override { drained = true; }
  std::string id;
  bool drained = false;
};

std::string IdOf(const std::shared_ptr<LoadedModel>& m) { return static_cast<FakeModel*>(m.get())->id; }

std::vector<CatalogEntry> Catalog(std::initializer_list<const char*> ids) {
  std::vector<CatalogEntry> out;
  for (const char* id : ids) out.push_back(CatalogEntry{id, std::string(id) + ".gemlet", 1, 0});
  return out;
}

ModelPool::Loader Loader(std::vector<std::string>* loads) {
  return [loads](const CatalogEntry& e) -> Result<std::shared_ptr<LoadedModel>> {
    loads->push_back(e.id);
    if (e.id == "broken") return Corrupt(e.path + ": not a .gemlet file");
    return std::shared_ptr<LoadedModel>(std::make_shared<FakeModel>(e.id));
  };
}

TEST(ModelPool, LoadsTheNamedModelAndKeepsOneResident) {
  std::vector<std::string> loads;
  ModelPool pool(Catalog({"o/a", "o/b"}), nullptr, 1, Loader(&loads));
  auto first = pool.Acquire("");  // nothing named, nothing loaded: the catalog's first
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(IdOf(*first), "o/a");
  std::weak_ptr<LoadedModel> a = *first;
  auto b = pool.Acquire("o/b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(IdOf(*b), "o/b");
  EXPECT_EQ(pool.Resident(), std::vector<std::string>{"o/b"});
  // o/a left the pool but stays alive while a request holds it.
  EXPECT_FALSE(a.expired());
  first->reset();
  EXPECT_TRUE(a.expired());
  // Nothing named: the most recently used. Ollama's tag names the model too.
  EXPECT_EQ(IdOf(*pool.Acquire("")), "o/b");
  EXPECT_EQ(IdOf(*pool.Acquire("o/a:latest")), "o/a");
  EXPECT_EQ(loads, (std::vector<std::string>{"o/a", "o/b", "o/a"}));
  EXPECT_EQ(pool.loads(), 3);
}

TEST(ModelPool, MaxResidentKeepsAnLru) {
  std::vector<std::string> loads;
  ModelPool pool(Catalog({"a/1", "a/2", "a/3"}), nullptr, 2, Loader(&loads));
  ASSERT_TRUE(pool.Acquire("a/1").ok());
  ASSERT_TRUE(pool.Acquire("a/2").ok());
  ASSERT_TRUE(pool.Acquire("a/1").ok());  // a hit: a/1 becomes the most recent
  ASSERT_TRUE(pool.Acquire("a/3").ok());  // a/2, the least recent, goes
  EXPECT_EQ(pool.Resident(), (std::vector<std::string>{"a/3", "a/1"}));
  EXPECT_EQ(loads, (std::vector<std::string>{"a/1", "a/2", "a/3"}));
}

TEST(ModelPool, AnUnknownNameIsA404WithoutAPinnedModel) {
  std::vector<std::string> loads;
  ModelPool pool(Catalog({"o/a"}), nullptr, 1, Loader(&loads));
  auto r = pool.Acquire("gpt-4o");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 404);
  EXPECT_EQ(r.error().code, "model_not_found");
  EXPECT_NE(r.error().message.find("gpt-4o"), std::string::npos);
  EXPECT_TRUE(loads.empty());
}

TEST(ModelPool, ThePinnedModelServesUnknownNamesAndNeverLeaves) {
  std::vector<std::string> loads;
  auto pinned = std::make_shared<FakeModel>("main");
  ModelPool pool(Catalog({"main", "o/a", "o/b"}), pinned, 1, Loader(&loads));
  EXPECT_EQ(IdOf(*pool.Acquire("")), "main");
  EXPECT_EQ(IdOf(*pool.Acquire("gpt-4o")), "main");
  EXPECT_EQ(IdOf(*pool.Acquire("main")), "main");
  EXPECT_EQ(IdOf(*pool.Acquire("o/a")), "o/a");
  EXPECT_EQ(IdOf(*pool.Acquire("o/b")), "o/b");
  EXPECT_EQ(IdOf(*pool.Acquire("")), "main");
  EXPECT_EQ(pool.Resident(), std::vector<std::string>{"o/b"});
  EXPECT_EQ(loads, (std::vector<std::string>{"o/a", "o/b"}));
  pool.Drain(std::chrono::milliseconds(0));
  EXPECT_TRUE(pinned->drained);
  auto late = pool.Acquire("o/a");
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().status, 503);
}

TEST(ModelPool, AModelThatDoesNotLoadIsA503NamingIt) {
  std::vector<std::string> loads;
  ModelPool pool(Catalog({"o/a", "broken"}), nullptr, 1, Loader(&loads));
  auto r = pool.Acquire("broken");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 503);
  EXPECT_NE(r.error().message.find("broken.gemlet: not a .gemlet file"), std::string::npos) << r.error().message;
  EXPECT_EQ(IdOf(*pool.Acquire("o/a")), "o/a");  // the pool still works
}

}  // namespace model_router_test
}  // namespace gemlet::server
