// Node.js baselines for docs/benchmarks.md: the reference gate as a Cedar policy set
// (@cedar-policy/cedar-wasm, preparsed, statefulIsAuthorized) and as json-rules-engine rules, plus
// the same gate as a plain JS function (the in-run floor). Each must pass the reference gate's
// five seed cases before it is timed. Run through tools/bench/node_baselines.sh.
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/");
const cedar = require("@cedar-policy/cedar-wasm/nodejs");
const { Engine } = require("json-rules-engine");

const ROWS = [
  ["payment.capture", "timeout", "replay_once"], ["payment.capture", "insufficient_funds", "never"],
  ["payment.capture", "duplicate", "never"], ["inventory.reserve", "lock_timeout", "replay_once"],
  ["inventory.reserve", "overbook", "never"], ["webhook.partner", "http_503", "replay_once"],
  ["webhook.partner", "http_400", "never"], ["mail.receipt", "smtp_421", "replay_once"],
  ["mail.receipt", "unknown_recipient", "never"],
];
const POLICY = new Map(ROWS.map(([t, e, v]) => [t + "\u0000" + e, v]));

function jsGate(l) {
  if (!l.idempotency_key) return "hold";
  if (l.already_committed) return "never";
  if (l.attempts >= 3) return "hold";
  return POLICY.get(l.topic + "\u0000" + l.error_class) ?? "hold";
}

// Cedar: one permit per outcome that is not the default; the determining policy names the verb.
const ok = 'context.idempotency_key != "" && !context.already_committed && context.attempts < 3';
const staticPolicies = {
  committed: 'permit(principal, action, resource) when { context.idempotency_key != "" && context.already_committed };',
};
const cedarVerb = { committed: "never" };
ROWS.forEach(([t, e, v], i) => {
  staticPolicies["row" + i] = `permit(principal, action, resource) when { ${ok} && context.topic == "${t}" && context.error_class == "${e}" };`;
  cedarVerb["row" + i] = v;
});
const parsed = cedar.preparsePolicySet("gate", { staticPolicies });
if (parsed.type !== "success") throw new Error("cedar parse: " + JSON.stringify(parsed));
function cedarGate(l) {
  const a = cedar.statefulIsAuthorized({
    principal: { type: "Worker", id: "w" }, action: { type: "Action", id: "decide" },
    resource: { type: "Letter", id: "l" }, context: l, preparsedPolicySetId: "gate", entities: [],
  });
  if (a.type !== "success") throw new Error("cedar: " + JSON.stringify(a));
  const reasons = a.response.diagnostics.reason;
  return reasons.length ? cedarVerb[reasons[0]] : "hold";
}

// json-rules-engine: the same mutually exclusive rules; no event = the default.
const engine = new Engine([], { allowUndefinedFacts: true });
const guard = [
  { fact: "idempotency_key", operator: "notEqual", value: "" },
  { fact: "already_committed", operator: "equal", value: false },
  { fact: "attempts", operator: "lessThan", value: 3 },
];
engine.addRule({ conditions: { all: [guard[0], { fact: "already_committed", operator: "equal", value: true }] },
  event: { type: "never" } });
for (const [t, e, v] of ROWS) {
  engine.addRule({ conditions: { all: [...guard, { fact: "topic", operator: "equal", value: t },
    { fact: "error_class", operator: "equal", value: e }] }, event: { type: v } });
}
async function jreGate(l) {
  const { events } = await engine.run(l);
  return events.length ? events[0].type : "hold";
}

const SEED = { topic: "payment.capture", error_class: "timeout", attempts: 1,
  idempotency_key: "cap_9f3a", already_committed: false };
const CASES = [[{}, "replay_once"], [{ already_committed: true }, "never"],
  [{ error_class: "weird_partner_code" }, "hold"], [{ idempotency_key: "" }, "hold"],
  [{ error_class: "insufficient_funds" }, "never"]];

// The same letter mix as the C++ benchmark: 60% known pairs, 20% unknown, 20% guards.
let seed = 20261129n;
function rand(n) { seed = (seed * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n); return Number((seed >> 33n) % BigInt(n)); }
const letters = [];
for (let i = 0; i < 4096; i++) {
  const [t, e0] = ROWS[rand(ROWS.length)];
  const kind = rand(10);
  letters.push({ topic: t, error_class: kind < 2 ? "unknown_" + rand(50) : e0, attempts: kind === 4 ? 5 : rand(3),
    idempotency_key: kind === 2 ? "" : "key_" + rand(100000), already_committed: kind === 3 });
}

async function main() {
  for (const [name, gate] of [["js", jsGate], ["cedar", cedarGate], ["json-rules-engine", jreGate]]) {
    for (const [change, want] of CASES) {
      const got = await gate({ ...SEED, ...change });
      if (got !== want) throw new Error(`${name} fails seed case ${JSON.stringify(change)}: ${got}`);
    }
    for (const l of letters.slice(0, 500)) {
      if ((await gate(l)) !== jsGate(l)) throw new Error(`${name} disagrees on ${JSON.stringify(l)}`);
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  async function time(name, gate, n, isAsync) {
    const runs = [];
    for (let r = 0; r < 5; r++) {
      const t0 = process.hrtime.bigint();
      if (isAsync) for (let i = 0; i < n; i++) await gate(letters[i & 4095]);
      else for (let i = 0; i < n; i++) gate(letters[i & 4095]);
      runs.push(Number(process.hrtime.bigint() - t0) / n);
    }
    console.log(`${median(runs).toFixed(1).padStart(10)} ns/decision  ${name} (n=${n}, median of 5)`);
  }
  console.log(`node ${process.version}, cedar ${cedar.getCedarVersion()}, all gates pass the five seed cases`);
  await time("plain JS function (Map lookup)", jsGate, 2_000_000, false);
  await time("Cedar WebAssembly, statefulIsAuthorized (preparsed)", cedarGate, 20_000, false);
  await time("json-rules-engine, engine.run", jreGate, 20_000, true);
}
main().catch((e) => { console.error(e); process.exit(1); });
