// A capability-compiler lock consumer in plain JavaScript (Node 20+).
//
// For one stage x model of a lock: build each route-plan attempt's body, send it with
// the official `openai` package, read the reply as the entry's recipe says and
// validate it with Ajv against the contract schema stored in the lock; a response that
// holds no answer (a refusal, a content filter, an error) is reported as `blocked`.
//
//   node consume.mjs LOCK STAGE MODEL MESSAGES.json     # one call, prints the result
//   node consume.mjs --cases LOCK CASES.json             # the test corpus (JSON lines out)
//
// Environment: OPENROUTER_API_KEY (or OPENAI_API_KEY), OPENROUTER_BASE_URL (default:
// the lock's client.base_url). Types of the lock: lock.d.ts (generated from its schema).
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { RE2JS } from "re2js";
import { admitText, fanOut, parseJSON, tooLong } from "./bounds.mjs";

// A contract's `regex_engine` says how its `pattern`s run in Python: `rust-regex`
// (pydantic-core's default, linear time) or `python-re` (Python's `re`, backtracking).
// Here the first runs with RE2 (re2js: linear time, no look-around or back-references; a
// pattern it cannot compile falls back to RegExp, as the Python reader falls back to
// `re`), the second with JavaScript's RegExp, which backtracks like `re`.
function linearRegExp(pattern, flags) {
  try {
    return RE2JS.compile(pattern);
  } catch {
    return new RegExp(pattern, flags);
  }
}
linearRegExp.code = "linearRegExp"; // Ajv names the function in generated code

const ajvs = new Map(); // engine -> Ajv instance
const validators = new Map(); // engine + key -> compiled Ajv validator

function validatorFor(key, schema, engine = "rust-regex") {
  const id = `${engine}|${key}`;
  if (!validators.has(id)) {
    if (!ajvs.has(engine)) {
      const linear = engine !== "python-re";
      const ajv = new Ajv2020({ allErrors: true, strict: false, ...(linear ? { code: { regExp: linearRegExp } } : {}) });
      addFormats(ajv);
      ajvs.set(engine, ajv);
    }
    validators.set(id, ajvs.get(engine).compile(schema));
  }
  return validators.get(id);
}

/** The body to POST for one attempt: request + [instructions, ...messages]. */
export function body(attempt, messages) {
  const head = attempt.instructions ? [attempt.instructions] : [];
  return { ...structuredClone(attempt.request), messages: [...head, ...messages] };
}

/** Every attempt of an entry, in order: the entry itself, then entry.attempts. */
export function plan(lock, stage, model) {
  const entry = lock.stages?.[stage]?.[model];
  if (!entry) throw new Error(`${stage} / ${model} is not in the lock`);
  if (entry.status !== "ok") throw new Error(`${stage} / ${model}: ${entry.error.message}`);
  return [entry, ...(entry.attempts ?? [])];
}

/** The reply text: the content, or at rung tool the forced call's arguments. */
export function replyText(recipe, completion) {
  const message = completion?.choices?.[0]?.message;
  if (recipe?.source === "tool_arguments") {
    const call = (message?.tool_calls ?? []).find((c) => c.function?.name === recipe.tool);
    if (!call) return null;
    return call.function.arguments;
  }
  return textOf(message?.content);
}

/**
 * A message content as reply text (the rule of the Python readers): a string as is, a list
 * of content parts as its "text" parts (a part with no type, or type null, counts as one) joined with no
 * separator, anything else null.
 */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  return content
    .filter((p) => p && typeof p === "object" && (p.type ?? "text") === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
}

/**
 * Why a response holds no answer to validate, or null (the rule of the Python reader):
 * "error" (a non-null top-level or choices[0] error: an object or a string; or
 * finish_reason "error"), "refused" (message.refusal, or a
 * refusal content part), "filtered" (finish_reason "content_filter"). None of them is
 * an invalid reply: a repair turn would ask the same question again.
 */
export function blockedBy(completion) {
  const choice = completion?.choices?.[0];
  const message = choice?.message ?? {};
  if (completion?.error != null || choice?.error != null || choice?.finish_reason === "error") {
    return "error";
  }
  if (typeof message.refusal === "string" && message.refusal) return "refused";
  if (Array.isArray(message.content) && message.content.some((p) => p?.type === "refusal")) {
    return "refused";
  }
  if (choice?.finish_reason === "content_filter") return "filtered";
  return null;
}

function unfence(text) {
  const s = text.trim();
  if (s.length < 6 || !s.startsWith("```") || !s.endsWith("```")) return text;
  const inner = s.slice(3, -3);
  const nl = inner.indexOf("\n");
  if (nl >= 0 && /^[A-Za-z0-9_+-]*$/.test(inner.slice(0, nl).trim())) return inner.slice(nl + 1);
  return inner;
}

function resolve(root, ref) {
  let node = root;
  for (const raw of ref.slice(2).split("/")) {
    if (raw === "") continue;
    node = node?.[raw.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return node;
}

const esc = (key) => key.replaceAll("~", "~0").replaceAll("/", "~1");

// Delete the nulls the projection added: walk the value with the shown schema; a null
// at a property whose schema pointer is in `absent` means "absent".
function undoNulls(value, node, pointer, ctx, seen = new Set()) {
  if (!node || typeof node !== "object" || value === null || typeof value !== "object") return;
  if (typeof node.$ref === "string") {
    const at = node.$ref === "#" ? "" : node.$ref.slice(1);
    const key = `${at}|${pointer}`;
    if (!seen.has(key)) undoNulls(value, resolve(ctx.root, node.$ref), at, ctx, new Set([...seen, key]));
  }
  if (node.properties && !Array.isArray(value)) {
    for (const [name, sub] of Object.entries(node.properties)) {
      const here = `${pointer}/properties/${esc(name)}`;
      if (!(name in value)) continue;
      if (value[name] === null && ctx.absent.has(here)) {
        delete value[name];
      } else {
        undoNulls(value[name], sub, here, ctx, seen);
      }
    }
  }
  if (node.items && Array.isArray(value)) {
    for (const item of value) undoNulls(item, node.items, `${pointer}/items`, ctx, seen);
  }
  for (const key of ["anyOf", "oneOf"]) {
    const branches = node[key];
    if (!Array.isArray(branches)) continue;
    const index = branches.findIndex((b, i) =>
      validatorFor(`${ctx.schemaKey}${pointer}/${key}/${i}`, { ...b, $defs: ctx.root.$defs }, ctx.engine)(value));
    if (index >= 0) undoNulls(value, branches[index], `${pointer}/${key}/${index}`, ctx, seen);
  }
  for (const [i, b] of (node.allOf ?? []).entries()) undoNulls(value, b, `${pointer}/allOf/${i}`, ctx, seen);
}

function jsonPath(steps) {
  let out = "$";
  for (const step of steps) {
    if (typeof step === "number") out += `[${step}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(step)) out += `.${step}`;
    else out += `['${step.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}']`;
  }
  return out;
}

function steps(instancePath, data) {
  const out = [];
  let current = data;
  for (const raw of instancePath.split("/").slice(1)) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    const step = Array.isArray(current) ? Number(key) : key;
    out.push(step);
    current = current?.[step];
  }
  return out;
}

// Under python-re, RegExp backtracks as `re` does: as compiler.reply.bounds.MAX_PYTHON_RE_CHARS
// does in Python, a string or key longer than this is refused before a pattern runs on it.
const MAX_PATTERN_CHARS = 10_000;
const patterned = new Map(); // contract hash -> whether its schema has a pattern

function hasPattern(key, schema) {
  if (!patterned.has(key)) patterned.set(key, /"pattern(Properties)?"\s*:/.test(JSON.stringify(schema)));
  return patterned.get(key);
}

function longString(data, where) {
  const stack = [[data, where]];
  while (stack.length) {
    const [value, at] = stack.pop();
    if (typeof value === "string" && value.length > MAX_PATTERN_CHARS) {
      return { path: jsonPath(at), message: `String is ${value.length.toLocaleString("en-US")} characters, more than the ${MAX_PATTERN_CHARS.toLocaleString("en-US")} a python-re pattern is run on` };
    }
    if (Array.isArray(value)) value.forEach((item, i) => stack.push([item, [...at, i]]));
    else if (value !== null && typeof value === "object") {
      for (const [k, item] of Object.entries(value)) {
        if (k.length > MAX_PATTERN_CHARS) return { path: `${jsonPath(at)}[*]`, message: `Key is ${k.length.toLocaleString("en-US")} characters, more than the ${MAX_PATTERN_CHARS.toLocaleString("en-US")} a python-re pattern is run on` };
        stack.push([item, [...at, k]]);
      }
    }
  }
  return null;
}

/** Apply the recipe and validate: {valid, value} or {valid: false, errors: [{path, message}]}. */
export function parseReply(lock, recipe, text) {
  if (typeof text !== "string") return { valid: false, errors: [{ path: "$", message: "no reply text" }] };
  const { schema, regex_engine: engine = "rust-regex" } = lock.contracts[recipe.contract];
  const size = tooLong(text);
  if (size) return { valid: false, errors: [size] };
  if (recipe.strip_fence) text = unfence(text);
  const bound = admitText(text, fanOut(recipe.contract, schema));
  if (bound) return { valid: false, errors: [bound] };
  const parsed = parseJSON(text, jsonPath);
  if (parsed.errors) return { valid: false, errors: parsed.errors };
  let data = parsed.data;
  const root = lock.schemas[recipe.schema];
  undoNulls(data, root, "", { root, absent: new Set(recipe.absent_nulls), schemaKey: recipe.schema, engine });
  let where = [];
  if (recipe.wrapped_root !== null) {
    if (data === null || typeof data !== "object" || Array.isArray(data)) {
      return { valid: false, errors: [{ path: "$", message: `expected an object with ${recipe.wrapped_root}` }] };
    }
    if (!(recipe.wrapped_root in data)) {
      return { valid: false, errors: [{ path: jsonPath([recipe.wrapped_root]), message: "Field required" }] };
    }
    data = data[recipe.wrapped_root];
    where = [recipe.wrapped_root];
  }
  const long = engine === "python-re" && hasPattern(recipe.contract, schema) ? longString(data, where) : null;
  if (long) return { valid: false, errors: [long] };
  const errors = check(`contract:${recipe.contract}`, schema, schema, data, where, engine);
  return errors.length ? { valid: false, errors: firstErrors(errors) } : { valid: true, value: data };
}

const isNull = (branch) => branch && branch.type === "null" && Object.keys(branch).length === 1;

// Validate `data` against `node` (inside `root`); errors as {path, message}. A failed
// anyOf/oneOf whose value is not null and that has one non-null branch reports that
// branch's errors (an Optional field: the errors pydantic reports), else only its own
// error at the value (not every branch's).
function check(key, root, node, data, where, engine) {
  const schema = node === root ? root : { ...node, $defs: root.$defs };
  const validate = validatorFor(key, schema, engine);
  if (validate(data)) return [];
  const found = validate.errors.map((e) => ({ ...e, at: steps(e.instancePath, data) }));
  const unions = found.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf")
    .sort((a, b) => a.at.length - b.at.length);
  // The errors at a path or below it are one run of the paths in sorted order, so each
  // union drops what it covers by two binary searches (linear in the errors overall: an
  // inner union inside a run already dropped is skipped).
  const order = found.map((_, i) => i).sort((i, j) => {
    const a = found[i].instancePath;
    const b = found[j].instancePath;
    return a < b ? -1 : a > b ? 1 : i - j;
  });
  const paths = order.map((i) => found[i].instancePath);
  const index = new Map(found.map((e, i) => [e, i]));
  const removed = new Uint8Array(found.length);
  const first = (text) => {
    let lo = 0;
    let hi = paths.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (paths[mid] < text) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const drop = (prefix, keep) => {
    for (let k = first(prefix); k < paths.length && paths[k] === prefix; k += 1) {
      if (order[k] !== keep) removed[order[k]] = 1;
    }
    const below = prefix + "/";
    for (let k = first(below); k < paths.length && paths[k].startsWith(below); k += 1) {
      if (order[k] !== keep) removed[order[k]] = 1;
    }
  };
  const extra = [];
  for (const u of unions) {
    const self = index.get(u);
    if (removed[self]) continue;
    const value = u.at.reduce((v, s) => v?.[s], data);
    const branches = resolve(schema, u.schemaPath.replace(/\/(anyOf|oneOf)$/, ""))?.[u.keyword] ?? [];
    const real = branches.filter((b) => !isNull(b));
    if (value === null || real.length !== 1) {
      // no branch matched: one error at the value, as jsonschema (and pydantic) report it
      drop(u.instancePath, self);
      continue;
    }
    drop(u.instancePath, -1);
    extra.push(...check(`${key}${u.schemaPath}`, root, real[0], value, [...where, ...u.at], engine));
  }
  const kept = found.filter((_, i) => !removed[i]);
  return [
    ...kept.map((e) => {
      const at = [...where, ...e.at];
      const order = at.map(String);
      if (e.keyword === "required") at.push(e.params.missingProperty);
      return { path: jsonPath(at), message: e.message, order };
    }),
    ...extra,
  ];
}

// compiler.reply.parse.MAX_REPLY_ERRORS: the errors listed; a last one at $ counts the rest.
const MAX_REPLY_ERRORS = 50;

// The first errors in the Python readers' order (by the value's path, step by step, each
// step compared as text), then one line for the rest.
function firstErrors(errors) {
  const before = (a, b) => {
    for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
      if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
    }
    return a.length - b.length;
  };
  const sorted = errors.map((e, i) => [e, i]).sort(([a, i], [b, j]) => before(a.order, b.order) || i - j);
  const shown = sorted.slice(0, MAX_REPLY_ERRORS).map(([{ path, message }]) => ({ path, message }));
  if (errors.length > MAX_REPLY_ERRORS) {
    shown.push({ path: "$", message: `... and ${errors.length - MAX_REPLY_ERRORS} more errors (MAX_REPLY_ERRORS)` });
  }
  return shown;
}

/** Send every attempt in order until one is answered; return the parsed reply. */
export async function run(client, lock, stage, model, messages) {
  let lastError;
  for (const attempt of plan(lock, stage, model)) {
    try {
      const completion = await client.chat.completions.create(body(attempt, messages));
      const blocked = blockedBy(completion);
      if (blocked) return { valid: false, blocked };
      if (!attempt.reply) return { valid: true, value: completion.choices?.[0]?.message?.content };
      return parseReply(lock, attempt.reply, replyText(attempt.reply, completion));
    } catch (err) {
      // OpenRouter answers 404 (no endpoint can serve it) or 503: try the next attempt.
      if (err instanceof OpenAI.APIError && (err.status === 404 || err.status === 503)) {
        lastError = err;
        continue;
      }
      throw err;
    }
  }
  throw lastError ?? new Error("no attempt");
}

function clientFor(lock) {
  return new OpenAI({
    apiKey: process.env.OPENROUTER_API_KEY ?? process.env.OPENAI_API_KEY ?? "missing",
    baseURL: process.env.OPENROUTER_BASE_URL ?? lock.client.base_url,
    maxRetries: 0,
  });
}

async function main(argv) {
  if (argv[0] === "--cases") {
    // Each case: {id, stage, model, attempt, messages}; the loopback server answers it.
    const lock = JSON.parse(readFileSync(argv[1], "utf8"));
    const cases = JSON.parse(readFileSync(argv[2], "utf8"));
    const client = clientFor(lock);
    for (const c of cases) {
      const attempt = plan(lock, c.stage, c.model)[c.attempt];
      const completion = await client.chat.completions.create(body(attempt, c.messages));
      const blocked = blockedBy(completion);
      const result = blocked
        ? { valid: false, errors: [] }
        : parseReply(lock, attempt.reply, replyText(attempt.reply, completion));
      const paths = result.valid ? [] : [...new Set(result.errors.map((e) => e.path))].sort();
      process.stdout.write(JSON.stringify({ id: c.id, valid: result.valid, paths, blocked }) + "\n");
    }
    return;
  }
  const [lockPath, stage, model, messagesPath] = argv;
  const lock = JSON.parse(readFileSync(lockPath, "utf8"));
  const messages = JSON.parse(readFileSync(messagesPath, "utf8"));
  const result = await run(clientFor(lock), lock, stage, model, messages);
  process.stdout.write(JSON.stringify(result, null, 2) + "\n");
  process.exitCode = result.valid ? 0 : 1;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`consume.mjs: ${err.message}\n`);
    process.exitCode = 2;
  });
}
