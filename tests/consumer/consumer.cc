// A C++ worker against the installed static library: load a table, decide the seed letter, print
// "verb rule". Exit 0 on success, 2 when the table does not load.
#include <cstdio>
#include <iostream>

#include "runtime/table.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer_cpp TABLE.rgt\n";
    return 2;
  }
  replaygate::LoadStatus status;
  auto table = replaygate::Table::load_file(argv[1], &status);
  if (table == nullptr) {
    std::cerr << "consumer_cpp: " << status.message << "\n";
    return 2;
  }
  replaygate::Input in(*table);
  in.set_string(table->field_index("topic"), "payment.capture");
  in.set_string(table->field_index("error_class"), "timeout");
  in.set_int(table->field_index("attempts"), 1);
  in.set_string(table->field_index("idempotency_key"), "cap_9f3a");
  in.set_bool(table->field_index("already_committed"), false);
  replaygate::Decision d = table->decide(in);
  std::cout << table->verb_name(d.verb) << " " << table->rule_name(d) << "\n";
  return 0;
}
