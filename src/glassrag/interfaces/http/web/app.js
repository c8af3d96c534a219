// glassrag web page: talks only to the JSON API. Every piece of text from the server is put
// into the page with textContent (never innerHTML): documents may contain HTML and script.
"use strict";

const $ = (id) => document.getElementById(id);
const CONTEXT_LINES = 2;

function token() {
  return localStorage.getItem("glassrag.token") || "";
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new Error((err.status || response.status) + " " + (err.code || "error") + ": " + (err.message || ""));
  }
  return data;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

function renderAnswer(answer) {
  $("result").hidden = false;
  const badge = $("status");
  badge.textContent = answer.status;
  badge.className = "badge " + answer.status;
  badge.dataset.status = answer.status;
  $("answer").textContent = answer.answer;

  const list = $("citations");
  list.replaceChildren();
  answer.citations.forEach((c, i) => {
    const item = el("li");
    const link = el("button", `[${i + 1}] ${c.title || c.doc_id} lines ${c.line_start}-${c.line_end}`);
    link.type = "button";
    link.className = "citation";
    link.addEventListener("click", () => openCitation(c));
    item.append(link, el("div", c.quote, "quote"));
    list.append(item);
  });
  if (!answer.citations.length) list.append(el("li", "none"));

  const rows = $("evidence").querySelector("tbody");
  rows.replaceChildren();
  answer.evidence.forEach((h, i) => {
    const row = el("tr");
    row.append(
      el("td", i + 1), el("td", h.score.toFixed(3)), el("td", h.title || h.doc_id),
      el("td", `${h.line_start}-${h.line_end}`), el("td", (h.matched_terms || []).join(", ")),
      el("td", h.text),
    );
    rows.append(row);
  });
  $("evidence-panel").hidden = false;

  $("trace-panel").hidden = !answer.trace_id;
  $("trace-id").textContent = answer.trace_id || "";
  $("trace").textContent = "";
}

// doc_ids are paths ("guides/setup.md"): each segment is encoded and the slashes kept, as
// the routes take the rest of the URL path (an encoded %2F is refused by some proxies).
function docPath(docId) {
  return docId.split("/").map(encodeURIComponent).join("/");
}

async function openCitation(c) {
  showError("");
  const params = new URLSearchParams({
    line_start: String(Math.max(1, c.line_start - CONTEXT_LINES)),
    line_end: String(c.line_end + CONTEXT_LINES),
  });
  if (c.content_hash) params.set("content_hash", c.content_hash);
  try {
    const data = await api("GET", `/documents/${docPath(c.doc_id)}/lines?${params}`);
    $("source").hidden = false;
    $("source-title").textContent = `${data.title || data.doc_id} (${data.source})`;
    $("source-note").textContent = data.current
      ? `version ${c.doc_version}, lines ${c.line_start}-${c.line_end}`
      : `an earlier version (${data.content_hash.slice(0, 12)}); the document has changed since`;
    const pre = $("source-lines");
    pre.replaceChildren();
    for (const line of data.lines) {
      const cited = line.line >= c.line_start && line.line <= c.line_end;
      const row = el("span", null, cited ? "line cited" : "line");
      row.append(el("span", line.line, "lineno"), document.createTextNode(line.text + "\n"));
      pre.append(row);
    }
  } catch (err) {
    showError(err.message);
  }
}

async function ask(event) {
  event.preventDefault();
  showError("");
  const body = { question: $("question").value };
  if ($("mode").value) body.mode = $("mode").value;
  $("ask").disabled = true;
  try {
    renderAnswer(await api("POST", "/ask", body));
    $("source").hidden = true;
  } catch (err) {
    showError(err.message);
  } finally {
    $("ask").disabled = false;
  }
}

async function showTrace() {
  try {
    const trace = await api("GET", `/traces/${encodeURIComponent($("trace-id").textContent)}`);
    $("trace").textContent = JSON.stringify(trace, null, 2);
  } catch (err) {
    showError(err.message);
  }
}

// Offer only the modes this knowledge base can serve (no dense or hybrid without an
// embedder); until /capabilities answers, the server's default mode is the only choice.
async function loadModes() {
  try {
    const caps = await api("GET", "/capabilities");
    const select = $("mode");
    select.replaceChildren(el("option", `default mode (${caps.default_mode})`));
    select.firstChild.value = "";
    for (const mode of caps.modes) {
      const option = el("option", mode);
      option.value = mode;
      select.append(option);
    }
  } catch (err) {
    showError(err.message);
  }
}

$("ask-form").addEventListener("submit", ask);
loadModes();
$("show-trace").addEventListener("click", showTrace);
$("token").value = token();
$("save-token").addEventListener("click", () => {
  localStorage.setItem("glassrag.token", $("token").value.trim());
});
