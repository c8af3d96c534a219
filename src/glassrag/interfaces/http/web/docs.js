// The API's routes, read from /openapi.json and shown with textContent only: no third-party
// script runs on this origin, whose localStorage holds the web page's token.
"use strict";

const METHODS = ["get", "post", "put", "patch", "delete", "head"];

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

// A schema with its $refs replaced by the component they name (cycles are cut).
function resolve(schema, spec, seen = new Set()) {
  if (Array.isArray(schema)) return schema.map((s) => resolve(s, spec, seen));
  if (!schema || typeof schema !== "object") return schema;
  if (typeof schema.$ref === "string") {
    const name = schema.$ref.split("/").pop();
    if (seen.has(name)) return { $ref: schema.$ref };
    const target = (spec.components && spec.components.schemas || {})[name];
    return resolve(target, spec, new Set([...seen, name]));
  }
  const out = {};
  for (const [key, value] of Object.entries(schema)) out[key] = resolve(value, spec, seen);
  return out;
}

function operation(method, path, op, spec) {
  const section = el("section", null, "route");
  const title = el("h2");
  title.append(el("code", method.toUpperCase() + " " + path));
  section.append(title);
  if (op.summary) section.append(el("p", op.summary));
  if (op.description) section.append(el("p", op.description, "note"));
  const params = op.parameters || [];
  if (params.length) {
    const table = el("table");
    const head = el("tr");
    ["parameter", "in", "required", "schema"].forEach((h) => head.append(el("th", h)));
    table.append(head);
    for (const p of params) {
      const row = el("tr");
      row.append(el("td", p.name), el("td", p.in), el("td", p.required ? "yes" : ""),
                 el("td", JSON.stringify(resolve(p.schema, spec))));
      table.append(row);
    }
    section.append(table);
  }
  const body = op.requestBody && op.requestBody.content;
  if (body) {
    for (const [type, content] of Object.entries(body)) {
      section.append(el("h3", "body (" + type + ")"));
      section.append(el("pre", JSON.stringify(resolve(content.schema, spec), null, 2)));
    }
  }
  return section;
}

async function main() {
  try {
    const response = await fetch("/openapi.json", { headers: { Accept: "application/json" } });
    const spec = await response.json();
    document.getElementById("api-description").textContent =
      (spec.info && spec.info.description) || "";
    const routes = document.getElementById("routes");
    for (const [path, item] of Object.entries(spec.paths || {})) {
      for (const method of METHODS) {
        if (item[method]) routes.append(operation(method, path, item[method], spec));
      }
    }
  } catch (err) {
    const box = document.getElementById("error");
    box.textContent = String(err);
    box.hidden = false;
  }
}

main();
