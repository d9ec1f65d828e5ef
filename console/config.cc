// console.yaml read with the strict YAML reader (console/config.h).
#include "console/config.h"

#include <charconv>
#include <string_view>

#include "common/diagnostic.h"
#include "common/source.h"
#include "common/yaml_tree.h"

namespace replaygate::console {
namespace {

std::string resolve(const std::string& base, const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find("://") != std::string::npos) return path;
  return base.empty() ? path : base + "/" + path;
}

std::string scalar(const yaml::Node& v, std::string_view key, const std::string& where,
                   std::string* out) {
  if (!v.is_scalar() || v.scalar.empty()) {
    return where + ": '" + std::string(key) + "' is not a non-empty string";
  }
  *out = v.scalar;
  return "";
}

std::string count(const yaml::Node& v, std::string_view key, const std::string& where,
                  int64_t* out) {
  int64_t n = 0;
  const char* end = v.scalar.data() + v.scalar.size();
  if (!v.is_scalar() || v.quoted || v.scalar.empty() ||
      std::from_chars(v.scalar.data(), end, n).ptr != end || n < 1 || n > 1000000) {
    return where + ": '" + std::string(key) + "' is not a whole number from 1 to 1000000";
  }
  *out = n;
  return "";
}

}  // namespace

std::string read_config(const std::string& path, Config* out) {
  std::string text, error;
  if (!read_source_file(path, &text, &error)) return error;
  return parse_config(text, path, out);
}

std::string parse_config(std::string_view text, const std::string& path, Config* out) {
  *out = Config{};
  out->path = path;
  const yaml::Document doc = yaml::parse(text, path);
  if (!doc.ok()) {
    for (const Diagnostic& d : doc.diagnostics) {
      if (d.severity == Severity::kError) return path + ": not YAML: " + d.message;
    }
  }
  if (!doc.root.is_mapping()) return path + ": not a mapping of settings";
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? "" : path.substr(0, slash);
  for (const auto& [k, v] : doc.root.entries) {
    const std::string& key = k.scalar;
    std::string why;
    if (key == "ledger") {
      why = scalar(v, key, path, &out->ledger);
      out->ledger = resolve(base, out->ledger);
    } else if (key == "ledger_scope") {
      why = scalar(v, key, path, &out->ledger_scope);
    } else if (key == "users") {
      why = scalar(v, key, path, &out->users);
      out->users = resolve(base, out->users);
    } else if (key == "policy") {
      why = scalar(v, key, path, &out->policy);
      out->policy = resolve(base, out->policy);
    } else if (key == "table") {
      why = scalar(v, key, path, &out->table);
      out->table = resolve(base, out->table);
    } else if (key == "audit") {
      why = scalar(v, key, path, &out->audit);
      out->audit = resolve(base, out->audit);
    } else if (key == "audit_logs") {
      if (!v.is_sequence()) why = path + ": 'audit_logs' is not a list of paths";
      for (const yaml::Node& item : v.items) {
        std::string log;
        if (why.empty()) why = scalar(item, key, path, &log);
        out->audit_logs.push_back(resolve(base, log));
      }
    } else if (key == "session_idle_minutes") {
      why = count(v, key, path, &out->session_idle_minutes);
    } else if (key == "session_max_hours") {
      why = count(v, key, path, &out->session_max_hours);
    } else if (key == "login_failures_per_user") {
      why = count(v, key, path, &out->login_failures_per_user);
    } else if (key == "login_failures_per_address") {
      why = count(v, key, path, &out->login_failures_per_address);
    } else if (key == "login_window_minutes") {
      why = count(v, key, path, &out->login_window_minutes);
    } else {
      why = path + ": unknown setting '" + key + "' (docs/console.md lists them)";
    }
    if (!why.empty()) return why;
  }
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"ledger", &out->ledger},
        {"users", &out->users},
        {"audit", &out->audit}}) {
    if (value->empty()) return path + ": '" + name + "' is required";
  }
  if (out->policy.empty()) {
    return path +
           ": 'policy' is required (the console redacts with the policy's sensitive list; "
           "a table alone does not carry it)";
  }
  return "";
}

}  // namespace replaygate::console
