// redrive/plan: the plan file's writer and reader, the digest, the letter identity, the users
// file, approval signatures and verify_plan() (docs/plans.md).
#include "redrive/plan/plan.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "redrive/plan/approval.h"
#include "redrive/plan/spool.h"

namespace replaygate::plan {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path temp(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("plan_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir / name;
}

PlanHeader header() {
  PlanHeader h;
  h.plan_id = "0123456789ab";
  h.source = "dump.jsonl";
  h.input_format = "letters";
  h.author = "alice";
  h.created_at = "2026-12-07T10:00:00.000000Z";
  h.expires_at = "2026-12-08T10:00:00.000000Z";
  h.policy = "replay_gate";
  h.policy_revision = 3;
  h.table_checksum = "00112233445566778899aabbccddeeff";
  h.cap = 2;
  h.rate = 5;
  h.required_approvals = 1;
  h.filters = {{"rule", "retry_transient"}};
  return h;
}

PlanLetter letter(int n, const std::string& verb = "replay") {
  PlanLetter l;
  l.source = "dump.jsonl";
  l.message_id = "m" + std::to_string(n);
  l.idempotency_key = "k" + std::to_string(n);
  l.body_digest = digest_of("body " + std::to_string(n));
  l.identity = letter_identity(l.source, l.message_id, l.body_digest, {{"topic", "s:orders"}});
  l.count = 1;
  l.first_line = static_cast<uint64_t>(n);
  l.decision = {verb, "retry_transient", "create", "republish", std::string("orders")};
  return l;
}

std::string write_plan(const fs::path& path, const std::vector<PlanLetter>& letters) {
  PlanWriter w(path.string());
  EXPECT_TRUE(w.begin(header())) << w.error();
  for (const PlanLetter& l : letters) EXPECT_TRUE(w.add(l)) << w.error();
  const std::string digest = w.finish();
  EXPECT_FALSE(digest.empty()) << w.error();
  return digest;
}

TEST(PlanFile, WritesAndReadsBackEveryLetterAndTheDigest) {
  const fs::path path = temp("two.plan.json");
  const std::vector<PlanLetter> letters = {letter(1), letter(2, "park")};
  const std::string digest = write_plan(path, letters);
  EXPECT_TRUE(is_digest(digest));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  std::vector<PlanLetter> read;
  const PlanRead r = read_plan_file(path.string(), [&](const PlanLetter& l) {
    read.push_back(l);
    return true;
  });
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.digest, digest);
  EXPECT_EQ(r.computed_digest, digest);
  EXPECT_EQ(r.header, header());
  EXPECT_EQ(read, letters);
  EXPECT_EQ(r.summary.letters, 2);
  EXPECT_EQ(r.summary.copies, 2);
  EXPECT_EQ(r.summary.by_verb.at("replay").letters, 1);
  EXPECT_EQ(r.summary.by_verb.at("park").copies, 1);
  // One letter per line between the header and the summary.
  const std::string text = read_all(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7);
  EXPECT_EQ(text.rfind("{\"format_version\":1,\"header\":{", 0), 0u);
}

TEST(PlanFile, AnEditedLetterChangesTheComputedDigest) {
  const fs::path path = temp("edited.plan.json");
  const std::string digest = write_plan(path, {letter(1), letter(2)});
  std::string text = read_all(path);
  const size_t at = text.find("\"k2\"");
  ASSERT_NE(at, std::string::npos);
  text[at + 2] = '3';
  std::ofstream(path, std::ios::binary) << text;
  const PlanRead r = read_plan_file(path.string(), {});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.digest, digest);
  EXPECT_NE(r.computed_digest, digest);
  EXPECT_FALSE(r.digest_matches());
}

TEST(PlanFile, RefusesWhatIsNotAPlan) {
  std::istringstream not_json("{\"format_version\":1,");
  const PlanRead cut = read_plan(not_json, {});
  EXPECT_EQ(cut.error,
            "not JSON: syntax error while parsing object key - unexpected end of input; "
            "expected string literal");
  EXPECT_EQ(cut.line, 1u);
  EXPECT_EQ(cut.column, 21u);  // the end of the input, after its 20 bytes
  std::istringstream other("{\"format_version\":2,\"letters\":[]}");
  EXPECT_EQ(read_plan(other, {}).error, "not a plan of format_version 1 (\"format_version\" is 2)");
  std::istringstream bad_letter("{\"format_version\":1,\"letters\":[{\"identity\":1}]}");
  EXPECT_EQ(read_plan(bad_letter, {}).error, "letter 1: \"identity\" is not a string");
  std::istringstream number("{\"format_version\":1,\"letters\":[7]}");
  EXPECT_EQ(read_plan(number, {}).error, "letter 1 is not an object");
  std::istringstream deep("{\"a\":[[[[[[[[[[1]]]]]]]]]]}");
  EXPECT_EQ(read_plan(deep, {}).error, "nested deeper than 8 levels");
  EXPECT_EQ(read_plan_file("/nonexistent/p.json", {}).error,
            "cannot read plan /nonexistent/p.json: No such file or directory");
}

TEST(PlanFile, ASummaryThatDisagreesWithTheLettersIsRefused) {
  const fs::path path = temp("summary.plan.json");
  write_plan(path, {letter(1)});
  std::string text = read_all(path);
  const size_t at = text.find("\"copies\":1,\"letters\":1}");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 10, "\"copies\":4");
  std::ofstream(path, std::ios::binary) << text;
  const PlanRead r = read_plan_file(path.string(), {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, path.string() +
                         ": the summary says 1 letters and 4 copies; the plan lists 1 letters "
                         "and 1 copies");
}

TEST(PlanNames, RabbitmqSourceEncodesTheVhostAndPlanQueueAppendsTheId) {
  EXPECT_EQ(plan::rabbitmq_source("/", "payments.dlq"), "rabbitmq:/%2F/payments.dlq");
  EXPECT_EQ(plan::rabbitmq_source("prod", "a/b"), "rabbitmq:/prod/a/b");
  EXPECT_EQ(plan::rabbitmq_source("50%/x", "q"), "rabbitmq:/50%25%2Fx/q");
  EXPECT_EQ(plan::plan_queue_name("payments.dlq", "0123456789ab"),
            "payments.dlq.plan.0123456789ab");
}

// An unfinished build's PLAN.tmp (a RabbitMQ build killed while moving letters): its header is
// read back from whatever was written after it, and anything else is refused with a message.
RC_GTEST_PROP(PlanProperty, AnUnfinishedPlansHeaderIsReadBackWhateverFollows, ()) {
  PlanHeader h = header();
  h.source = "rabbitmq:/%2F/" + *rc::gen::container<std::string>(rc::gen::inRange(' ', '~'));
  h.author = *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::inRange('a', 'z')));
  const fs::path path = temp("unfinished.json");
  PlanWriter w(path.string());
  RC_ASSERT(w.begin(h));
  const int letters = *rc::gen::inRange(0, 3);
  for (int i = 0; i < letters; ++i) RC_ASSERT(w.add(letter(i)));
  RC_ASSERT(w.sync());
  w.keep_unfinished();  // as a kill leaves it
  std::string error;
  const std::optional<PlanHeader> back = read_unfinished_header(w.tmp_path(), &error);
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == h);
  // Cut anywhere inside its first line: no header, a message.
  const std::string text = read_all(w.tmp_path());
  const size_t cut = *rc::gen::inRange<size_t>(0, text.find('\n') + 1);
  std::istringstream in(text.substr(0, cut));
  RC_ASSERT(!unfinished_header(in, "cut", &error).has_value());
  RC_ASSERT(error == "cut does not start with a plan's header line");
  fs::remove(w.tmp_path());
}

TEST(LetterIdentity, CoversSourceMessageIdBodyAndInputs) {
  const std::string base = letter_identity("q", std::string("m1"), "b", {{"topic", "s:a"}});
  EXPECT_EQ(base, letter_identity("q", std::string("m1"), "b", {{"topic", "s:a"}}));
  EXPECT_NE(base, letter_identity("q2", std::string("m1"), "b", {{"topic", "s:a"}}));
  EXPECT_NE(base, letter_identity("q", std::string("m2"), "b", {{"topic", "s:a"}}));
  EXPECT_NE(base, letter_identity("q", std::nullopt, "b", {{"topic", "s:a"}}));
  EXPECT_NE(base, letter_identity("q", std::string("m1"), "c", {{"topic", "s:a"}}));
  EXPECT_NE(base, letter_identity("q", std::string("m1"), "b", {{"topic", "s:b"}}));
  // Length prefixes: moving a byte between fields changes the identity.
  EXPECT_NE(letter_identity("ab", std::string("c"), "b", {}),
            letter_identity("a", std::string("bc"), "b", {}));
  EXPECT_EQ(digest_of(""),
            "blake2b:0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
}

// A plan of a few generated letters, written and read back.
RC_GTEST_PROP(PlanProperty, WriteReadRoundTripAndAnyEditedLetterByteIsCaught, ()) {
  const int n = *rc::gen::inRange(1, 6);
  std::vector<PlanLetter> letters;
  for (int i = 0; i < n; ++i) {
    PlanLetter l = letter(i + 1);
    if (*rc::gen::arbitrary<bool>()) {
      l.message_id = *rc::gen::container<std::string>(rc::gen::inRange(' ', '~'));
    } else {
      l.message_id.reset();
    }
    l.count = *rc::gen::inRange<int64_t>(1, 5);
    l.identity = letter_identity(l.source, l.message_id, l.body_digest, {});
    letters.push_back(l);
  }
  const fs::path path = temp("prop.plan.json");
  PlanWriter w(path.string());
  RC_ASSERT(w.begin(header()));
  for (const PlanLetter& l : letters) RC_ASSERT(w.add(l));
  const std::string digest = w.finish();
  std::vector<PlanLetter> read;
  const PlanRead r = read_plan_file(path.string(), [&](const PlanLetter& l) {
    read.push_back(l);
    return true;
  });
  RC_ASSERT(r.ok);
  RC_ASSERT(r.digest_matches());
  RC_ASSERT(r.digest == digest);
  RC_ASSERT(read == letters);
  // One byte of one letter line changed: the plan fails to parse, or its content no longer
  // hashes to the digest it carries.
  std::string text = read_all(path);
  const size_t first = text.find("\n{") + 1;
  const size_t last = text.find("\n]");
  const size_t at = *rc::gen::inRange(first, last);
  RC_PRE(text[at] != '\n');  // the line break between two letters is not a letter's byte
  const char old = text[at];
  const char by = *rc::gen::distinctFrom(rc::gen::arbitrary<char>(), old);
  text[at] = by;
  std::istringstream in(text);
  const PlanRead edited = read_plan(in, {});
  RC_ASSERT(!edited.ok || edited.computed_digest != digest);
}

fs::path users_file(const verify::PublicKey& alice, const verify::PublicKey& bob) {
  const fs::path path = temp("users.json");
  std::ofstream(path) << R"({"format_version":1,"users":[)"
                      << R"({"name":"alice","role":"approver","public_key":")"
                      << verify::hex(alice.key.data(), alice.key.size()) << R"("},)"
                      << R"({"name":"bob","role":"approver","public_key":")" << bob.path
                      << R"("},{"name":"carol","role":"viewer"}]})";
  return path;
}

struct Keys {
  verify::PublicKey alice_pub, bob_pub, eve_pub;
  verify::SecretKey alice, bob, eve;
  Keys() {
    std::string error;
    for (auto [name, pub, sec] :
         {std::tuple{"alice", &alice_pub, &alice}, std::tuple{"bob", &bob_pub, &bob},
          std::tuple{"eve", &eve_pub, &eve}}) {
      const fs::path s = temp(std::string(name) + ".sec"), p = temp(std::string(name) + ".pub");
      fs::remove(s);
      fs::remove(p);
      EXPECT_TRUE(verify::generate_key_files(s.string(), p.string(), pub, &error)) << error;
      EXPECT_TRUE(verify::read_secret_key(s.string(), sec, &error)) << error;
    }
  }
};

TEST(Users, ReadsInlineAndFileKeysAndRefusesBadEntries) {
  Keys k;
  Users users;
  ASSERT_EQ(read_users_file(users_file(k.alice_pub, k.bob_pub).string(), &users), "");
  ASSERT_EQ(users.users.size(), 3u);
  EXPECT_EQ(users.find("alice")->key.id, k.alice_pub.id);
  EXPECT_EQ(users.find("bob")->key.id, k.bob_pub.id);
  EXPECT_FALSE(users.find("carol")->has_key);
  EXPECT_EQ(users.by_key(k.bob_pub.id)->name, "bob");
  EXPECT_EQ(users.by_key(k.eve_pub.id), nullptr);
  std::istringstream role(R"({"format_version":1,"users":[{"name":"x","role":"admin"}]})");
  EXPECT_EQ(read_users(role, "u.json", "", &users),
            "u.json: user 1: role 'admin' is not one of viewer, operator, approver");
  std::istringstream twice(
      R"({"format_version":1,"users":[{"name":"x","role":"viewer"},{"name":"x","role":"viewer"}]})");
  EXPECT_EQ(read_users(twice, "u.json", "", &users), "u.json: user 2: 'x' is listed twice");
  std::istringstream keyless(R"({"format_version":1,"users":[{"name":"x","role":"approver"}]})");
  EXPECT_EQ(read_users(keyless, "u.json", "", &users),
            "u.json: user 1: approver 'x' has no \"public_key\"");
  // A typo never loosens anything: "disabld" would leave the user enabled.
  std::istringstream typo(
      R"({"format_version":1,"users":[{"name":"x","role":"viewer","disabld":true}]})");
  EXPECT_EQ(read_users(typo, "u.json", "", &users),
            "u.json: user 1: unknown key \"disabld\" (a user has name, role, public_key, "
            "password_hash and disabled)");
  std::istringstream top(R"({"format_version":1,"users":[],"Users":[]})");
  EXPECT_EQ(read_users(top, "u.json", "", &users),
            "u.json: unknown key \"Users\" (a users file has format_version and users)");
  std::istringstream control(
      R"({"format_version":1,"users":[{"name":"al ice\n","role":"viewer"}]})");
  EXPECT_EQ(read_users(control, "u.json", "", &users),
            "u.json: user 1: \"name\" contains a control character");
  std::istringstream broken("{\"format_version\":1,\n\"users\":[}");
  EXPECT_EQ(read_users(broken, "u.json", "", &users),
            "u.json:2:10: not JSON: syntax error while parsing value - unexpected '}'; expected "
            "'[', '{', or a literal");
}

TEST(Approval, SignsVerifiesAndRefusesTheAuthorAndForeignKeys) {
  Keys k;
  Users users;
  const std::string path = users_file(k.alice_pub, k.bob_pub).string();
  ASSERT_EQ(read_users_file(path, &users), "");
  const PlanHeader h = header();  // author alice
  EXPECT_EQ(approve_refusal(h, "alice", k.alice, users, path),
            "'alice' is the plan's author and cannot approve it: a second person must");
  EXPECT_EQ(approve_refusal(h, "bob", k.eve, users, path), "the key " + verify::hex(k.eve_pub.id) +
                                                               " is not listed in " + path +
                                                               ": the approval would not count");
  EXPECT_EQ(approve_refusal(h, "bob", k.alice, users, path),
            "the key " + verify::hex(k.alice_pub.id) + " is alice's, not bob's");
  EXPECT_EQ(approve_refusal(h, "bob", k.bob, users, path), "");

  const std::string d = digest_of("plan");
  Approval a = sign_approval(k.bob, d, "bob", "reviewed", "2026-12-07T10:00:00.000000Z");
  EXPECT_EQ(a.signature.size(), 128u);
  EXPECT_EQ(a.key_id, verify::hex(k.bob_pub.id));
  EXPECT_EQ(approval_problem(a, users), "");
  Approval changed = a;
  changed.reason = "not reviewed";
  EXPECT_EQ(approval_problem(changed, users),
            "the approval by 'bob' has a signature that does not verify");
  Approval foreign = sign_approval(k.eve, d, "bob", "reviewed", "2026-12-07T10:00:00.000000Z");
  EXPECT_EQ(approval_problem(foreign, users),
            "the approval by 'bob' is signed by key " + verify::hex(k.eve_pub.id) +
                ", which is not their key (" + verify::hex(k.bob_pub.id) + ")");
  Approval unsigned_one = a;
  unsigned_one.signature = "";
  EXPECT_EQ(approval_problem(unsigned_one, users), "the approval by 'bob' has no valid signature");
}

TEST(VerifyPlan, ValidOnlyWithEnoughApprovalsAnUneditedPlanAndTheSameTable) {
  Keys k;
  Users users;
  ASSERT_EQ(read_users_file(users_file(k.alice_pub, k.bob_pub).string(), &users), "");
  const fs::path path = temp("verify.plan.json");
  const std::string digest = write_plan(path, {letter(1), letter(2)});
  const PlanRead plan = read_plan_file(path.string(), {});
  ASSERT_TRUE(plan.ok);
  VerifyInput in;
  in.plan = &plan;
  in.users = &users;
  in.now = "2026-12-07T12:00:00.000000Z";
  PlanVerdict v = verify_plan(in);
  EXPECT_FALSE(v.valid);
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].message, "the plan has 0 of the 1 approval(s) it needs");

  in.approvals.push_back(sign_approval(k.alice, digest, "alice", "mine", in.now));
  in.approvals.push_back(sign_approval(k.bob, digest, "bob", "ok", in.now));
  v = verify_plan(in);
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.approved_by, std::vector<std::string>{"bob"});
  ASSERT_EQ(v.findings.size(), 1u);
  EXPECT_EQ(v.findings[0].message, "'alice' is the plan's author: their approval does not count");

  in.policy_required = 2;
  v = verify_plan(in);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.findings.back().message, "the plan has 1 of the 2 approval(s) it needs");
  in.policy_required = 0;

  in.table_checksum = "ffeeddccbbaa99887766554433221100";
  in.now = "2026-12-09T00:00:00.000000Z";
  v = verify_plan(in);
  EXPECT_FALSE(v.valid);
  EXPECT_EQ(v.findings[0].message, "the plan expired at 2026-12-08T10:00:00.000000Z");
  EXPECT_EQ(v.findings[1].message,
            "the table's checksum is ffeeddccbbaa99887766554433221100; the plan was built on "
            "00112233445566778899aabbccddeeff: build and approve a new plan");
}

// The spool lists every distinct key once, in key order, with its first payload and its count,
// whatever the memory budget (one run, many runs, a run per pair).
RC_GTEST_PROP(SpoolProperty, MergesToTheDistinctKeysFirstPayloadsAndCounts, ()) {
  const auto keys = *rc::gen::container<std::vector<std::string>>(
      rc::gen::container<std::string>(rc::gen::inRange<char>('a', 'e')));
  const size_t budget = *rc::gen::inRange<size_t>(1, 400);
  std::map<std::string, std::pair<std::string, uint64_t>> expected;
  Spool spool(temp("spool").string(), budget);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string payload = "p" + std::to_string(i);
    RC_ASSERT(spool.add(keys[i], payload));
    auto [it, added] = expected.try_emplace(keys[i], payload, 0);
    ++it->second.second;
  }
  std::map<std::string, std::pair<std::string, uint64_t>> got;
  std::string last;
  bool first = true;
  RC_ASSERT(spool.merge([&](std::string_view key, std::string_view payload, uint64_t count) {
    RC_ASSERT(first || std::string(key) > last);
    first = false;
    last = std::string(key);
    got[last] = {std::string(payload), count};
    return true;
  }));
  RC_ASSERT(got == expected);
}

// Copies of a letter become one letter with their count; two identities with one key are a
// shared key (counted by identity, not by copy), whatever the budget.
TEST(LetterSet, ListsEachIdentityOnceWithItsCountAndNamesSharedKeys) {
  for (const size_t budget : {size_t{1} << 20, size_t{300}}) {
    LetterSet set(temp("set").string(), budget);
    PlanLetter other_body = letter(2);
    other_body.body_digest = digest_of("another body");
    other_body.identity =
        letter_identity(other_body.source, other_body.message_id, other_body.body_digest, {});
    for (const PlanLetter& l :
         {letter(3), letter(1), letter(3), letter(2), letter(3), other_body}) {
      ASSERT_TRUE(set.add(l)) << set.error();
    }
    const fs::path path = temp("set.plan.json");
    PlanWriter w(path.string());
    ASSERT_TRUE(w.begin(header()));
    std::vector<std::pair<std::string, uint64_t>> shared;
    ASSERT_TRUE(set.write(w, [&](std::string_view key, uint64_t n) {
      shared.emplace_back(std::string(key), n);
    })) << set.error();
    ASSERT_FALSE(w.finish().empty()) << w.error();
    std::vector<std::pair<std::string, int64_t>> listed;
    const PlanRead r = read_plan_file(path.string(), [&](const PlanLetter& l) {
      listed.emplace_back(*l.message_id, l.count);
      return true;
    });
    ASSERT_TRUE(r.digest_matches()) << r.error;
    EXPECT_EQ(r.summary.letters, 4);
    EXPECT_EQ(r.summary.copies, 6);
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, (std::vector<std::pair<std::string, int64_t>>{
                          {"m1", 1}, {"m2", 1}, {"m2", 1}, {"m3", 3}}));
    EXPECT_EQ(shared, (std::vector<std::pair<std::string, uint64_t>>{{"k2", 2}}));
  }
}

TEST(Spool, RemovesItsRunFiles) {
  const fs::path prefix = temp("spool_files");
  {
    Spool spool(prefix.string(), 64);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(spool.add(std::to_string(i % 7), "payload"));
    EXPECT_GT(spool.runs(), 1u);
    uint64_t total = 0, keys = 0;
    ASSERT_TRUE(spool.merge([&](std::string_view, std::string_view, uint64_t count) {
      total += count;
      ++keys;
      return true;
    }));
    EXPECT_EQ(total, 50u);
    EXPECT_EQ(keys, 7u);
    EXPECT_TRUE(fs::exists(prefix.string() + ".run.0"));
  }
  EXPECT_FALSE(fs::exists(prefix.string() + ".run.0"));
}

// A run file cut short, or whose length field points past its end, fails the merge with a reason:
// never a crash, never an allocation of the damaged length.
TEST(Spool, ARunFileCutShortOrDamagedFailsTheMerge) {
  for (const bool cut : {true, false}) {
    SCOPED_TRACE(cut ? "cut short" : "a length past the end");
    const fs::path prefix = temp(cut ? "spool_cut" : "spool_damaged");
    Spool spool(prefix.string(), 64);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(spool.add("key-" + std::to_string(i), "payload"));
    ASSERT_GT(spool.runs(), 1u);
    const std::string run = prefix.string() + ".run.0";
    if (cut) {
      fs::resize_file(run, fs::file_size(run) - 3);
    } else {
      std::fstream f(run, std::ios::in | std::ios::out | std::ios::binary);
      const char huge[4] = {'\xff', '\xff', '\xff', '\x7f'};
      f.write(huge, sizeof huge);
    }
    uint64_t given = 0;
    EXPECT_FALSE(spool.merge([&](std::string_view, std::string_view, uint64_t count) {
      given += count;
      return true;
    }));
    EXPECT_EQ(spool.error(), "a spool run file of " + prefix.string() + " is cut short");
    EXPECT_LT(given, 50u);
  }
}

// A spooled letter whose bytes were damaged on disk (still a well-formed record) fails the
// plan's write with a reason instead of throwing out of the build.
TEST(LetterSet, ADamagedSpooledLetterFailsTheWrite) {
  const fs::path prefix = temp("set_damaged");
  LetterSet set(prefix.string(), 300);
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(set.add(letter(i))) << set.error();
  const std::string run = prefix.string() + ".letters.run.0";
  ASSERT_TRUE(fs::exists(run));
  std::string bytes;
  {
    std::ifstream in(run, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t brace = bytes.find('{');
  ASSERT_NE(brace, std::string::npos);
  bytes[brace] = '#';
  {
    std::ofstream out(run, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  PlanWriter w(temp("set_damaged.plan.json").string());
  ASSERT_TRUE(w.begin(header()));
  EXPECT_FALSE(set.write(w, [](std::string_view, uint64_t) {}));
  EXPECT_EQ(set.error(), "a spooled letter is not JSON (a damaged spool run file)");
}

}  // namespace
}  // namespace replaygate::plan
