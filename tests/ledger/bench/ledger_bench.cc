// Claims per second for each ledger backend: batches of distinct random keys (never claimed
// before), each batch one durable commit, from one process. Not a test; the numbers go to
// docs/benchmarks.md.
//
//   rg_ledger_bench [--batches N] [--batch-size K] [--sqlite PATH] [--postgres URL]
//
// Without --sqlite, a fresh file in a temporary directory; without --postgres, a private
// postgresql-15 server on loopback (fsync on, the default), started and stopped by the benchmark.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ledger/ledger.h"
#include "pg_server.h"

using namespace replaygate::ledger;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Numbers {
  double cpu_us_per_claim = 0;
  double claims_per_s = 0, lookups_per_s = 0, mean_batch_ms = 0, worst_batch_ms = 0;
};

bool run(const std::string& url, int batches, int batch_size, Numbers& n) {
  auto l = open_ledger(url);
  if (!l.ok()) {
    std::fprintf(stderr, "open %s: %s\n", url.c_str(), l.error().message.c_str());
    return false;
  }
  std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  auto make = [&] {
    std::vector<Claim> claims(static_cast<size_t>(batch_size));
    for (auto& c : claims) {
      std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                    static_cast<unsigned long long>(rng()));
      c.key = buf;
      c.policy = "dlq-replay-gate";
      c.revision = 3;
      c.table_checksum = "1242ace0f61e98a37d91a175388558cb";
      c.rule = "known_failures:payment.capture/timeout";
      c.message_id = "m-" + c.key.substr(0, 12);
      c.worker = "bench";
    }
    return claims;
  };
  // One warm-up batch (connection, statement preparation, table pages).
  if (auto w = (*l)->claim_batch(make()); !w.ok()) {
    std::fprintf(stderr, "%s\n", w.error().message.c_str());
    return false;
  }
  std::vector<std::vector<Claim>> all;
  for (int b = 0; b < batches; ++b) all.push_back(make());
  double worst = 0;
  const double c0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& claims : all) {
    const auto b0 = std::chrono::steady_clock::now();
    auto r = (*l)->claim_batch(claims);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b0).count();
    worst = std::max(worst, ms);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      return false;
    }
    for (const auto& o : *r) {
      if (!o.won) {
        std::fprintf(stderr, "a fresh random key was not won\n");
        return false;
      }
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  n.claims_per_s = batches * static_cast<double>(batch_size) / s;
  n.cpu_us_per_claim = (cpu_seconds() - c0) * 1e6 / (batches * static_cast<double>(batch_size));
  n.mean_batch_ms = s * 1000 / batches;
  n.worst_batch_ms = worst;
  // Dry-run lookups of the same keys.
  const auto l0 = std::chrono::steady_clock::now();
  for (const auto& claims : all) {
    std::vector<std::string> keys;
    for (const auto& c : claims) keys.push_back(c.key);
    auto r = (*l)->lookup(keys);
    if (!r.ok()) return false;
  }
  const double ls = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
  n.lookups_per_s = batches * static_cast<double>(batch_size) / ls;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 200, batch_size = 1000;
  std::string sqlite_path, pg_url, only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batches"))
      batches = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch-size"))
      batch_size = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--sqlite"))
      sqlite_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else if (!std::strcmp(argv[i], "--postgres"))
      pg_url = argv[i + 1];
  }
  std::string tmp;
  if (sqlite_path.empty()) {
    char tmpl[] = "/tmp/rg-ledger-bench-XXXXXX";
    tmp = mkdtemp(tmpl);
    sqlite_path = tmp + "/ledger.db";
  }
  replaygate::ledger::testing::PgServer server;
  if (pg_url.empty() && only != "sqlite") {
    const std::string why = server.create();
    if (!why.empty()) {
      std::fprintf(stderr, "postgresql: %s\n", why.c_str());
      return 2;
    }
    pg_url = server.url();
  }
  std::printf("batches of %d distinct random keys, %d batches, one durable commit per batch\n",
              batch_size, batches);
  std::printf("%-10s %12s %12s %12s %12s %18s\n", "backend", "claims/s", "lookups/s", "ms/batch",
              "worst ms", "client CPU us/claim");
  int rc = 0;
  for (auto [name, url] :
       {std::pair<const char*, std::string>{"sqlite", sqlite_path}, {"postgresql", pg_url}}) {
    if (!only.empty() && only != name) continue;
    Numbers n;
    if (!run(url, batches, batch_size, n)) {
      rc = 1;
      continue;
    }
    std::printf("%-10s %12.0f %12.0f %12.2f %12.2f %18.2f\n", name, n.claims_per_s, n.lookups_per_s,
                n.mean_batch_ms, n.worst_batch_ms, n.cpu_us_per_claim);
  }
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return rc;
}
