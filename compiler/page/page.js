// capc audit / diff page: draws the matrix from the JSON in #capc-data, filters it and
// opens a cell's report. No network, no library; text is set with textContent only.
(function () {
  "use strict";
  const POOL = JSON.parse(document.getElementById("capc-pool").textContent);
  const DATA = JSON.parse(document.getElementById("capc-data").textContent, function (k, v) {
    return v !== null && typeof v === "object" && typeof v.$pool === "number"
      && Object.keys(v).length === 1 ? POOL[v.$pool] : v;
  });
  const SEV = {};
  DATA.severities.forEach(function (s) { SEV[s.name] = s; });
  const DIFF = DATA.kind === "diff";
  const QUIET = ["none", "routing", "na"];  // no adjustment beyond routing notes

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(function ([k, v]) {
      if (v === null || v === undefined || v === false) return;
      if (k === "text") node.textContent = v;
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : v);
    });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.append(c);
    });
    return node;
  }
  function json(v) { return v === undefined ? "(absent)" : JSON.stringify(v); }
  function usd(cost) {
    if (!cost) return "cost: n/a";
    if (cost.usd === null) return "cost unknown";
    const n = Number(cost.usd);
    return "$" + (n === 0 ? "0" : n >= 1 ? n.toFixed(2) : Number(n.toPrecision(3)).toString());
  }
  // One side of a pair (an audit cell, or the old/new side of a diff cell).
  function rungs(side) {
    if (!side) return [];
    if (side.status !== "ok") return [side.status === "error" ? "failed" : "n/a"];
    return side.attempts.length ? side.attempts.map(function (a) { return a.rung; })
      : [side.rung];
  }
  function kinds(side) {
    if (!side) return [];
    const out = side.details.map(function (a) { return a.kind; });
    side.attempts.slice(1).forEach(function (a) {
      a.adjustments.forEach(function (x) { out.push(x.kind); });
    });
    return out;
  }
  function sides(cell) { return DIFF ? [cell.old, cell.new] : [cell]; }
  function front(cell) { return DIFF ? (cell.new || cell.old) : cell; }
  function reasoningText(side) {
    return side && side.reasoning_change ? "reasoning " + side.reasoning_change : "no request";
  }
  function rungText(side) {
    if (!side) return "absent";
    const r = rungs(side);
    return r[0] + (r.length > 1 ? " +" + (r.length - 1) : "");
  }

  // ---- header: title, what it was made from, legend, filters ----
  const body = document.body;
  body.append(el("h1", { text: DATA.title }));
  DATA.sides.forEach(function (side) {
    if (DIFF) body.append(el("p", { class: "side-label", text: side.label + ": " + side.text }));
    const table = el("table", { class: "made-from", "aria-label": side.label + " inputs" }, [
      el("caption", { class: "sr-only", text: "made from (" + side.label + "): " + side.text })]);
    side.inputs.forEach(function (i) {
      table.append(el("tr", {}, [el("th", { scope: "row", text: i.what }),
        el("td", { text: (i.name || "(none)") + (i.date ? " (as of " + i.date + ")" : "") }),
        el("td", { class: "hash", text: i.sha256 ? "sha256 " + i.sha256 : "not a local file" })]));
    });
    body.append(table);
  });
  const total = DATA.cells.length;
  body.append(el("p", { class: "summary", text: DIFF
    ? DATA.changes + " change(s) in " + total + " of " + DATA.pairs + " stage/model pair(s)"
      + (total ? "; only the pairs that changed are shown" : "; nothing changed")
    : total + " stage/model pair(s); " + DATA.generator + "; cost = worst case of one call"
      + " (estimated prompt x prompt price + length limit x completion price)" }));
  const legend = el("ul", { class: "legend", "aria-label": "legend" });
  DATA.severities.forEach(function (s) {
    legend.append(el("li", { title: s.description }, [
      el("span", { class: "swatch sev-" + s.name, "aria-hidden": "true", text: s.symbol }),
      el("span", { text: s.label }), el("span", { class: "what", text: "(" + s.description + ")" })]));
  });
  body.append(el("h2", { class: "sr-only", text: "Legend" }), legend);

  function options(label, values) {
    return [el("option", { value: "", text: label })].concat(values.map(function (v) {
      return el("option", { value: v, text: v });
    }));
  }
  const uniq = function (a) { return Array.from(new Set(a)).sort(); };
  const all = DATA.cells;
  const vendorSel = el("select", { id: "f-vendor" }, options("all vendors",
    uniq(all.map(function (c) { return c.vendor; }))));
  const rungSel = el("select", { id: "f-rung" }, options("any rung",
    uniq([].concat.apply([], all.map(function (c) {
      return [].concat.apply([], sides(c).map(rungs)); })))));
  const kindSel = el("select", { id: "f-kind" }, options("any adjustment kind",
    uniq([].concat.apply([], all.map(function (c) {
      return [].concat.apply([], sides(c).map(kinds)); })))));
  const onlyBox = el("input", { type: "checkbox", id: "f-adjusted" });
  const search = el("input", { type: "search", id: "f-search", placeholder: "model id contains" });
  const shown = el("output", { id: "shown", "aria-live": "polite" });
  body.append(el("form", { class: "filters", role: "search", "aria-label": "filters" }, [
    el("label", {}, ["vendor", vendorSel]),
    el("label", {}, ["rung (any attempt)", rungSel]),
    el("label", {}, ["adjustment", kindSel]),
    el("label", {}, [onlyBox, "only pairs with adjustments (routing notes aside)"]),
    el("label", {}, ["search", search]),
    shown]));

  // ---- the matrix: models (rows, grouped by vendor) x stages (columns) ----
  const byPair = new Map();
  all.forEach(function (c, i) { byPair.set(c.stage + "\u0000" + c.model, i); });
  const models = uniq(all.map(function (c) { return c.vendor + "\u0000" + c.model; }));
  const table = el("table", { class: "matrix", id: "matrix" }, [
    el("caption", { class: "sr-only", text: "models by stage; each cell opens its report" }),
    el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "model" })].concat(
      DATA.stages.map(function (s) { return el("th", { scope: "col", text: s }); })))])]);
  const buttons = [];
  let group = null, vendor = null;
  models.forEach(function (key) {
    const [v, model] = key.split("\u0000");
    if (v !== vendor) {
      vendor = v;
      group = el("tbody", { "data-vendor": v }, [el("tr", { class: "vendor" }, [
        el("th", { colspan: String(DATA.stages.length + 1), scope: "colgroup", text: v })])]);
      table.append(group);
    }
    const row = el("tr", { "data-model": model }, [el("th", { scope: "row", text: model })]);
    DATA.stages.forEach(function (stage) {
      const index = byPair.get(stage + "\u0000" + model);
      if (index === undefined) {
        row.append(el("td", { class: "empty" }, [el("span", { class: "sr-only",
          text: DIFF ? "unchanged or not listed" : "not listed for " + stage })]));
        return;
      }
      const button = cellButton(all[index], index);
      buttons.push(button);
      row.append(el("td", {}, [button]));
    });
    group.append(row);
  });
  body.append(el("h2", { class: "sr-only", text: "Matrix" }), table);

  function cellButton(cell, index) {
    const side = front(cell);
    const sev = SEV[side.severity] || SEV.none;
    const lines = [];
    let label;
    if (DIFF) {
      const n = cell.changes.length;
      lines.push(el("span", { class: "line", text: rungText(cell.old) + " \u2192 " + rungText(cell.new) }));
      lines.push(el("span", { class: "line", text: reasoningText(cell.new) }));
      lines.push(el("span", { class: "line", text: usd(cell.old && cell.old.cost) + " \u2192 "
        + usd(cell.new && cell.new.cost) }));
      label = n + " change(s)";
    } else {
      lines.push(el("span", { class: "line", text: reasoningText(cell) }));
      lines.push(el("span", { class: "line", text: usd(cell.cost) }));
      label = rungText(cell);
    }
    const r = rungs(side);
    const spoken = cell.stage + " / " + cell.model + ": " + sev.label + "; "
      + (DIFF ? label + "; " : "") + "rung " + r.join(", then ") + "; "
      + reasoningText(side) + "; " + usd(side.cost) + ". Opens the report.";
    return el("button", { type: "button", class: "cell sev-" + sev.name, "data-index": String(index),
      "data-stage": cell.stage, "data-model": cell.model, "data-severity": sev.name,
      "aria-haspopup": "dialog", "aria-label": spoken, title: sev.label }, [
      el("span", { class: "head" }, [el("span", { class: "sym", "aria-hidden": "true", text: sev.symbol }),
        el("span", { class: "rung", text: label })])].concat(lines));
  }

  function matches(cell) {
    const q = search.value.trim().toLowerCase();
    if (vendorSel.value && cell.vendor !== vendorSel.value) return false;
    if (q && cell.model.toLowerCase().indexOf(q) < 0) return false;
    const ss = sides(cell);
    if (rungSel.value && !ss.some(function (s) { return rungs(s).indexOf(rungSel.value) >= 0; })) return false;
    if (kindSel.value && !ss.some(function (s) { return kinds(s).indexOf(kindSel.value) >= 0; })) return false;
    if (onlyBox.checked && !ss.some(function (s) { return s && QUIET.indexOf(s.severity) < 0; })) return false;
    return true;
  }
  function apply() {
    let count = 0;
    buttons.forEach(function (b) {
      const ok = matches(all[Number(b.dataset.index)]);
      b.hidden = !ok;
      if (ok) count += 1;
    });
    table.querySelectorAll("tbody").forEach(function (g) {
      let any = false;
      g.querySelectorAll("tr[data-model]").forEach(function (row) {
        const on = row.querySelector(".cell:not([hidden])") !== null;
        row.hidden = !on;
        any = any || on;
      });
      g.hidden = !any;
    });
    shown.value = count + " of " + total + " pair(s) shown";
    shown.textContent = shown.value;
  }
  [vendorSel, rungSel, kindSel, onlyBox].forEach(function (i) { i.addEventListener("change", apply); });
  search.addEventListener("input", apply);
  apply();

  // ---- a cell's report ----
  const dialog = el("dialog", { id: "report", "aria-labelledby": "report-title" });
  body.append(dialog);
  function facts(pairs) {
    const dl = el("dl", { class: "facts" });
    pairs.forEach(function ([k, v]) { if (v !== null && v !== undefined) dl.append(el("dt", { text: k }), el("dd", { text: v })); });
    return dl;
  }
  function rowsTable(caption, heads, rows) {
    return el("table", { class: "rows" }, [el("caption", { class: "sr-only", text: caption }),
      el("tr", {}, heads.map(function (h) { return el("th", { scope: "col", text: h }); }))].concat(
      rows.map(function (r) { return el("tr", {}, r.map(function (v) { return el("td", { text: v }); })); })));
  }
  function adjustmentsTable(list, caption) {
    if (!list.length) return el("p", { class: "note", text: "no adjustments" });
    return rowsTable(caption, ["kind", "path", "requested", "applied", "reason", "evidence"],
      list.map(function (a) {
        return [a.kind, a.path, json(a.requested), a.applied === null ? "(omitted)" : json(a.applied),
          a.reason, a.evidence ? a.evidence.text : "rule of this library"];
      }));
  }
  function report(side, into) {
    if (!side) { into.append(el("p", { class: "note", text: "this side has no such pair" })); return; }
    const cost = side.cost;
    into.append(facts([
      ["colour", (SEV[side.severity] || SEV.none).symbol + " " + (SEV[side.severity] || SEV.none).label],
      ["status", side.status + (side.error ? ": " + side.error : "")],
      ["rung", rungs(side).join(", then ")],
      ["reasoning", side.reasoning_change ? side.reasoning_change + "; sent " + json(side.reasoning) : null],
      ["length limit", side.max_tokens === null ? null : side.max_tokens + " tokens (" + side.length_param + ")"],
      ["dropped", side.dropped.length ? side.dropped.join(", ") : null],
      ["worst-case cost", cost ? (cost.usd === null ? "unknown" : cost.usd + " USD") + " = "
        + cost.prompt_tokens + " prompt tokens x " + cost.prompt_price + " + "
        + cost.completion_tokens + " completion tokens x " + cost.completion_price + " USD/token"
        + (cost.notes.length ? " (" + cost.notes.join("; ") + ")" : "")
        : side.status !== "ok" ? "none: no request" : "not recorded (a lock has no prices)"],
      ["notes", side.report_notes.length ? side.report_notes.join("; ") : null]]));
    into.append(el("h3", { text: "Adjustments (" + side.details.length + ")" }),
      adjustmentsTable(side.details, "adjustments of attempt 1"));
    if (side.attempts.length) {
      into.append(el("h3", { text: "Body sent: route plan of " + side.attempts.length + " attempt(s)" }));
      side.attempts.forEach(function (a, i) {
        into.append(el("h4", { text: "attempt " + (i + 1) + ": rung " + a.rung + ", reasoning "
          + a.reasoning_change + (a.endpoints.length ? ", endpoints " + a.endpoints.join(", ") : "") }));
        if (i > 0) into.append(adjustmentsTable(a.adjustments, "adjustments of attempt " + (i + 1)));
        into.append(el("details", { open: i === 0 }, [el("summary", { text: "request body (messages aside)" }),
          el("pre", { text: JSON.stringify(a.request, null, 2) })]));
        if (a.instructions) into.append(el("details", {}, [el("summary", { text: "instruction message" }),
          el("pre", { text: a.instructions.content })]));
      });
    }
    into.append(el("h3", { text: "Route table (" + side.routes.length + " endpoint(s))" }));
    into.append(side.routes.length ? rowsTable("route table", ["endpoint", "provider", "attempt or excluded by", "detail", "rung", "max_tokens", "status"],
      side.routes.map(function (r) {
        return [r.endpoint, r.provider_name || "", r.attempt === null ? "excluded: " + r.excluded_by : "attempt " + (r.attempt + 1),
          r.detail, r.rung || "", r.max_tokens === null ? "" : String(r.max_tokens), r.status === null ? "" : String(r.status)];
      })) : el("p", { class: "note", text: side.status !== "ok" ? "none: no request was compiled"
        : "no endpoint data: the model-level figures were used, no endpoint was excluded" }));
  }
  function open(index) {
    const cell = all[index];
    dialog.replaceChildren(el("button", { type: "button", class: "close", text: "close" }),
      el("h2", { id: "report-title", text: cell.stage + " / " + cell.model }));
    dialog.querySelector(".close").addEventListener("click", function () { dialog.close(); });
    if (DIFF) {
      dialog.append(el("h3", { text: "Changes (" + cell.changes.length + ")" }));
      dialog.append(el("ul", { class: "changes" }, cell.changes.map(function (c) {
        return el("li", {}, [el("code", { text: (c.path || "pair") + ": " }),
          el("span", { text: (c.old_present ? json(c.old) : "(absent)") + " \u2192 " + (c.new_present ? json(c.new) : "(absent)") })]
          .concat(c.explanations.map(function (e) {
            return el("span", { class: "why", text: (e.via ? "via " + e.via + ": " : "") + e.change + " " + e.kind + ": " + e.reason + (e.evidence ? " [" + e.evidence + "]" : "") });
          })));
      })));
      const grid = el("div", { class: "sides" });
      [["old", cell.old], ["new", cell.new]].forEach(function ([name, side]) {
        const section = el("section", { "aria-label": name }, [el("h3", { text: name + ": " + DATA.sides[name === "old" ? 0 : 1].text })]);
        report(side, section);
        grid.append(section);
      });
      dialog.append(grid);
    } else {
      report(cell, dialog);
    }
    dialog.showModal();
    dialog.querySelector(".close").focus();
  }
  table.addEventListener("click", function (event) {
    const button = event.target.closest(".cell");
    if (button) open(Number(button.dataset.index));
  });
})();
