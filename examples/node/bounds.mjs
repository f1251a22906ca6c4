// The bounds a reply must meet before it is parsed and validated: the same figures, in the
// same order, as the Python readers (compiler/reply/parse.py `admit_reply` and
// compiler/reply/bounds.py), so a reply refused there is refused here, at the same path.
//
// Each function returns null when the reply is within the bound, else one error
// {path, message}; a reply over a bound is not validated.

/** compiler.reply.parse.MAX_REPLY_CHARS: the longest reply text parsed (characters). */
export const MAX_REPLY_CHARS = 4_000_000;
/** compiler.reply.parse.MAX_REPLY_NODES: the most JSON values, counted from the text. */
export const MAX_REPLY_NODES = 100_000;
/** compiler.reply.bounds.MAX_REPLY_DEPTH: the deepest nesting of arrays and objects. */
export const MAX_REPLY_DEPTH = 128;
/** compiler.reply.bounds.MAX_ERROR_WORK: the most `values x fan-out` validated. */
export const MAX_ERROR_WORK = 2_000_000;

// One JSON string, escapes included, or the rest of the text when it is unterminated.
const STRING = /"(?:[^"\\]+|\\.)*"?/gs;
const CAP = 10 ** 12;
const n = (x) => x.toLocaleString("en-US"); // 4,000,000: the Python messages' figures

/** The text with its strings emptied (brackets and commas inside strings do not count). */
function bare(text) {
  return text.replace(STRING, '""');
}

function count(text, marks) {
  let n = 0;
  for (const ch of text) if (marks.includes(ch)) n += 1;
  return n;
}

/** About how many JSON values the text holds: 1 + its `[`, `{`, `,` and `:` outside strings. */
export function countValues(text) {
  return 1 + count(bare(text), "[{,:");
}

function depthError(stripped) {
  let depth = 0;
  let deepest = 0;
  if (count(stripped, "[{") > MAX_REPLY_DEPTH) {
    for (const ch of stripped) {
      if (ch === "[" || ch === "{") deepest = Math.max(deepest, ++depth);
      else if (ch === "]" || ch === "}") depth -= 1;
    }
  }
  if (deepest <= MAX_REPLY_DEPTH) return null;
  return { path: "$", message: `Reply nests ${n(deepest)} levels deep, more than the ${n(MAX_REPLY_DEPTH)} accepted` };
}

/**
 * The bounds the text alone shows, checked on the unfenced text before JSON.parse:
 * size (checked by the caller before unfencing: see `tooLong`), number of values,
 * nesting, and the unions' error work (`fan` from `fanOut`).
 */
export function admitText(text, fan) {
  if (text.length > MAX_REPLY_NODES) {
    const values = countValues(text);
    if (values > MAX_REPLY_NODES) {
      return depthError(bare(text)) ?? {
        path: "$",
        message: `Reply holds about ${n(values)} JSON values, more than the ${n(MAX_REPLY_NODES)} validated`,
      };
    }
  }
  const stripped = bare(text);
  const deep = depthError(stripped);
  if (deep) return deep;
  if (fan > 1) {
    const values = countValues(text);
    if (values * fan > MAX_ERROR_WORK) {
      return {
        path: "$",
        message: `Reply holds about ${n(values)} JSON values and the contract's unions let each produce up to ${n(fan)} errors: more than the ${n(MAX_ERROR_WORK)} validated`,
      };
    }
  }
  return null;
}

/** The size bound, on the text as received (before a fence is stripped). */
export function tooLong(text) {
  if (text.length <= MAX_REPLY_CHARS) return null;
  return { path: "$", message: `Reply is ${n(text.length)} characters, more than the ${n(MAX_REPLY_CHARS)} accepted` };
}

// The literals pydantic-core's JSON parser reads as numbers (NaN, Infinity, -Infinity)
// where JSON.parse refuses them; outside strings only.
const NON_FINITE = /(-?Infinity|NaN)/g;

/**
 * Parse as the Python readers do (pydantic-core's `from_json`): `NaN`, `Infinity` and
 * `-Infinity` read as numbers (then refused at their path, below), a lone surrogate
 * escape (`"\ud800"`) is invalid JSON. Returns {data} or {errors: [{path, message}]}.
 */
export function parseJSON(text, at) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (err) {
    // again with the non-finite literals outside strings as 1e999 (Infinity; NaN too,
    // only to be refused at its path)
    let changed = false;
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(STRING)) {
      parts.push(text.slice(last, m.index).replace(NON_FINITE, () => ((changed = true), "1e999")), m[0]);
      last = m.index + m[0].length;
    }
    parts.push(text.slice(last).replace(NON_FINITE, () => ((changed = true), "1e999")));
    try {
      if (!changed) throw err;
      data = JSON.parse(parts.join(""));
    } catch {
      return { errors: [{ path: "$", message: `Invalid JSON: ${err.message}` }] };
    }
  }
  const found = [];
  const stack = [[data, []]];
  while (stack.length && found.length < 50) {
    const [value, path] = stack.pop();
    if (typeof value === "number" && !Number.isFinite(value)) {
      found.push({ path: at(path), message: "NaN and Infinity are not JSON numbers; a finite number is expected" });
    } else if (typeof value === "string" && !value.isWellFormed()) {
      return { errors: [{ path: "$", message: "Invalid JSON: a lone surrogate escape (a half of a UTF-16 pair) is not a character" }] };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i -= 1) stack.push([value[i], [...path, i]]);
    } else if (value !== null && typeof value === "object") {
      for (const [k, item] of Object.entries(value)) {
        if (!k.isWellFormed()) {
          return { errors: [{ path: "$", message: "Invalid JSON: a lone surrogate escape (a half of a UTF-16 pair) is not a character" }] };
        }
        stack.push([item, [...path, k]]);
      }
    }
  }
  return found.length ? { errors: found } : { data };
}

const fans = new Map(); // contract key -> fan-out

/**
 * How many errors one reply value can produce at most under the schema (the rule of
 * compiler.reply.bounds.fan_out): an object can miss each property; a union without a
 * discriminator keeps every branch's errors, so its fan-out is the sum of its branches'.
 */
export function fanOut(key, schema) {
  if (!fans.has(key)) {
    const defs = new Map();
    for (const k of ["$defs", "definitions"]) {
      for (const [name, sub] of Object.entries(schema?.[k] ?? {})) {
        if (sub && typeof sub === "object" && !Array.isArray(sub)) defs.set(`#/${k}/${name}`, sub);
      }
    }
    fans.set(key, Math.max(1, fan(schema, defs, new Set(), 0)));
  }
  return fans.get(key);
}

function fan(node, defs, active, depth) {
  if (!node || typeof node !== "object" || Array.isArray(node) || depth > 64) return 1;
  let best = 1;
  const ref = node.$ref;
  if (typeof ref === "string" && defs.has(ref) && !active.has(ref)) {
    active.add(ref);
    best = fan(defs.get(ref), defs, active, depth + 1);
    active.delete(ref);
  }
  const props = node.properties;
  if (props && typeof props === "object" && !Array.isArray(props)) {
    best = Math.max(best, Object.keys(props).length,
      ...Object.values(props).map((v) => fan(v, defs, active, depth + 1)));
  }
  for (const k of ["items", "additionalProperties", "contains"]) {
    best = Math.max(best, fan(node[k], defs, active, depth + 1));
  }
  for (const k of ["prefixItems", "allOf"]) {
    for (const sub of node[k] ?? []) best = Math.max(best, fan(sub, defs, active, depth + 1));
  }
  for (const k of ["anyOf", "oneOf"]) {
    const branches = node[k];
    if (Array.isArray(branches) && branches.length) {
      const each = branches.map((b) => fan(b, defs, active, depth + 1));
      const tagged = node.discriminator !== undefined && node.discriminator !== null;
      best = Math.max(best, tagged ? Math.max(...each) : Math.min(CAP, each.reduce((a, b) => a + b, 0)));
    }
  }
  return best;
}
