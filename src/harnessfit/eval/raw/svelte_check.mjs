// harnessfit's Svelte checker: runs in harnessfit's own Svelte toolchain folder (pinned `svelte` and
// `@sveltejs/mcp`), reads {"items": [{"id", "code"}], "autofixer": bool} as JSON on stdin and prints one JSON
// object: {"versions": {"svelte", "node"}, "results": [{"id", "parse", "compile", "autofixer"} | {"id", "crash"}]}.
//
// - parse: svelte's parse(code, {modern: true}) — the AST (without `loc` objects; offsets kept) or the error.
//   The modern parser reads legacy syntax too, so the policy rules (in Python) can judge code that does not
//   compile in runes mode.
// - compile: compile(code, {runes: true, generate: "client"}) — the error (code, message, position) or the
//   warnings (code, message, position).
// - autofixer: @sveltejs/mcp's svelteAutofixer (its AST visitors and its eslint-plugin-svelte rules, after a
//   compile of its own). Run only for code that compiled; the issues that repeat a compiler warning (the
//   autofixer formats them as "<message> at line L, column C") are dropped here, so each finding is counted
//   once, in the compile check. The package's MCP server setup fetches a documentation index from the web when
//   it is imported; this checker must work offline, so `fetch` is replaced by one that refuses before the
//   import and that refusal is ignored. The autofixer itself needs no network.
const refuse = async () => {
  throw new Error("harnessfit: network disabled for the Svelte checker");
};
globalThis.fetch = refuse;
process.on("unhandledRejection", () => {});

const { parse, compile, VERSION } = await import("svelte/compiler");

function where(pos) {
  return pos ? { line: pos.line ?? null, column: pos.column ?? null } : { line: null, column: null };
}

function firstLine(message) {
  return String(message ?? "").split("\n")[0];
}

function astJson(ast) {
  return JSON.parse(
    JSON.stringify(ast, (key, value) => {
      if (key === "loc" || key === "name_loc") return undefined;
      if (typeof value === "bigint") return value.toString();
      if (value instanceof RegExp) return value.toString();
      return value;
    }),
  );
}

function diagnostic(e) {
  return { code: e.code, message: firstLine(e.message), ...where(e.start) };
}

async function checkOne(item, autofixer) {
  const code = item.code;
  const out = { id: item.id };
  try {
    out.parse = { ast: astJson(parse(code, { modern: true })), error: null };
  } catch (e) {
    if (!e || !e.code) return { id: item.id, crash: `parse: ${e && e.stack ? e.stack : e}` };
    out.parse = { ast: null, error: diagnostic(e) };
  }
  let warnings = [];
  try {
    const result = compile(code, { runes: true, generate: "client", filename: "Component.svelte" });
    warnings = result.warnings;
    out.compile = { error: null, warnings: warnings.map(diagnostic) };
  } catch (e) {
    if (!e || !e.code) return { id: item.id, crash: `compile: ${e && e.stack ? e.stack : e}` };
    out.compile = { error: diagnostic(e), warnings: [] };
  }
  if (!autofixer) {
    out.autofixer = { skipped: "disabled" };
  } else if (out.compile.error) {
    out.autofixer = { skipped: "does not compile" };
  } else {
    const fixed = await autofixer({ code, desired_svelte_version: 5, filename: "Component.svelte" });
    const fromCompiler = new Set(warnings.map((w) => `${w.message} at line ${w.start?.line}, column ${w.start?.column}`));
    out.autofixer = {
      issues: fixed.issues.filter((m) => !fromCompiler.has(m)),
      suggestions: fixed.suggestions,
    };
  }
  return out;
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
const items = request.items ?? [];
let autofixer = null;
if (request.autofixer !== false) ({ svelteAutofixer: autofixer } = await import("@sveltejs/mcp"));
const results = [];
for (const item of items) {
  try {
    results.push(await checkOne(item, autofixer));
  } catch (e) {
    results.push({ id: item.id, crash: String(e && e.stack ? e.stack : e) });
  }
}
process.stdout.write(JSON.stringify({ versions: { svelte: VERSION, node: process.version }, results }));
// the package's refused documentation fetch leaves a 10 s abort timer behind: exit now that the answer is out
process.stdout.end(() => process.exit(0));
