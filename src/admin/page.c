#include <string.h>
#include <event2/http.h>

#include "page.h"
#include "serve.h"

static const char page_html_text[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    "<title>skewgate</title>\n"
    "<link rel=\"stylesheet\" href=\"/status.css\">\n"
    "<script src=\"/status.js\" defer></script>\n"
    "</head>\n"
    "<body>\n"
    "<header><h1>skewgate</h1><span id=\"updated\">loading&hellip;</span></header>\n"
    "<section id=\"verdict\">\n"
    "<h2>Verdict: <span id=\"decision\">?</span> <span id=\"reason\"></span></h2>\n"
    "<p id=\"message\"></p>\n"
    "<dl>\n"
    "<dt>Mode</dt><dd id=\"mode\"></dd>\n"
    "<dt>Boot image</dt><dd id=\"bootimage\"></dd>\n"
    "<dt>Limit</dt><dd id=\"limit\"></dd>\n"
    "<dt>Source</dt><dd id=\"source\"></dd>\n"
    "<dt id=\"machineslabel\" hidden>Machines watch</dt><dd id=\"machines\" hidden></dd>\n"
    "<dt>Override</dt><dd id=\"override\"></dd>\n"
    "</dl>\n"
    "</section>\n"
    "<section>\n"
    "<h2>Held nodes (<span id=\"heldcount\">0</span>)</h2>\n"
    "<table id=\"held\"><thead><tr><th>Address</th><th>Pool</th><th>Ignition</th><th>Spec</th>"
    "<th>Reason</th><th>Attempts</th><th>Held for</th><th>Last seen</th><th>State</th></tr></thead>\n"
    "<tbody id=\"heldrows\"></tbody></table>\n"
    "<p id=\"heldnote\"></p>\n"
    "</section>\n"
    "<section id=\"pace\" hidden>\n"
    "<h2>Pacing: <span id=\"pacejoining\">0</span> joining, <span id=\"pacewaiting\">0</span> waiting</h2>\n"
    "<p id=\"pacecounting\"></p>\n"
    "<p id=\"pacecsrs\"></p>\n"
    "<table><thead><tr><th>Place</th><th>Address</th><th>Pool</th><th>Waited</th><th>Last seen</th></tr></thead>\n"
    "<tbody id=\"pacerows\"></tbody></table>\n"
    "</section>\n"
    "<section>\n"
    "<h2>Counters</h2>\n"
    "<table id=\"counters\"><tbody id=\"counterrows\"></tbody></table>\n"
    "</section>\n"
    "<p id=\"error\" role=\"alert\"></p>\n"
    "</body>\n"
    "</html>\n";

static const char page_style_text[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
    "header{display:flex;align-items:baseline;gap:1em}\n"
    "#updated,#heldnote{color:#666;font-size:.9em}\n"
    ".admit{color:#176117}.reject{color:#a11}\n"
    "dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}\n"
    "dt{font-weight:bold}dd{margin:0}\n"
    "table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left;border-bottom:1px solid #ddd}th{white-space:nowrap}\n"
    "td.num{text-align:right}#error{color:#a11}\n";

/* Every value goes through text() or a cell's textContent. */
static const char page_script_text[] =
    "'use strict';\n"
    "const REFRESH_MS = 3000;\n"
    "function text(id, value) { document.getElementById(id).textContent = value; }\n"
    "function age(s) {\n"
    "  s = Math.max(0, Math.floor(s));\n"
    "  const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;\n"
    "  if (h) return h + 'h' + String(m).padStart(2, '0') + 'm';\n"
    "  if (m) return m + 'm' + String(r).padStart(2, '0') + 's';\n"
    "  return r + 's';\n"
    "}\n"
    "function row(body, cells) {\n"
    "  const tr = document.createElement('tr');\n"
    "  for (const [value, cls] of cells) {\n"
    "    const td = document.createElement('td');\n"
    "    td.textContent = value;\n"
    "    if (cls) td.className = cls;\n"
    "    tr.appendChild(td);\n"
    "  }\n"
    "  body.appendChild(tr);\n"
    "}\n"
    "function showVerdict(v) {\n"
    "  const d = document.getElementById('decision');\n"
    "  d.textContent = v.decision === 'admit' ? 'admitting new nodes' : 'holding new nodes';\n"
    "  d.className = v.decision === 'admit' ? 'admit' : 'reject';\n"
    "  text('reason', '(' + v.reason + ')');\n"
    "  text('message', v.message);\n"
    "  text('mode', v.mode || 'unknown');\n"
    "  const b = v.bootImage || {}, l = v.limit || {};\n"
    "  text('bootimage', [b.ocpVersion && 'OCP ' + b.ocpVersion, b.rhcosVersion && 'RHCOS ' + b.rhcosVersion]\n"
    "       .filter(Boolean).join(', ') || 'not reported');\n"
    "  text('limit', 'OCP ' + l.ocpVersion + ', RHEL ' + l.rhelVersion);\n"
    "  text('source', v.source + (v.lastSync ? ', last sync ' + v.lastSync : ', never synced'));\n"
    "  const w = v.machinesWatch;\n"
    "  for (const id of ['machineslabel', 'machines']) document.getElementById(id).hidden = !w;\n"
    "  if (w) text('machines', w.state + ' since ' + w.since +\n"
    "              (w.lastList ? ', last list ' + w.lastList : ', never listed: every gated client is held') +\n"
    "              (w.lastError ? '; last error at ' + w.lastError.at + ': ' + w.lastError.message : ''));\n"
    "  const o = v.override;\n"
    "  text('override', o ? o.decision + (o.until ? ' until ' + o.until : ', no expiry') : 'none');\n"
    "}\n"
    "function showHeld(h) {\n"
    "  const body = document.getElementById('heldrows');\n"
    "  body.replaceChildren();\n"
    "  for (const c of h.clients) {\n"
    "    row(body, [[c.address], [c.pool || '-'], [c.userAgent], [c.spec], [c.reason], [String(c.attempts), 'num'],\n"
    "               [age(c.heldSeconds), 'num'], [age(c.quietSeconds) + ' ago', 'num'],\n"
    "               [c.state, c.admitted ? 'admit' : 'reject']]);\n"
    "  }\n"
    "  text('heldcount', String(h.held));\n"
    "  text('heldnote', h.clients.length ? 'forgotten after ' + age(h.forgetAfterSeconds) + ' of silence'\n"
    "       : 'no node is held');\n"
    "  showPace(h.pace);\n"
    "}\n"
    "function showPace(p) {\n"
    "  document.getElementById('pace').hidden = !p;\n"
    "  if (!p) return;\n"
    "  const body = document.getElementById('pacerows');\n"
    "  body.replaceChildren();\n"
    "  for (const w of p.line)\n"
    "    row(body, [[String(w.place), 'num'], [w.address], [w.pool], [age(w.waitedSeconds), 'num'],\n"
    "               [age(w.quietSeconds) + ' ago' + (w.present ? '' : ' (absent)'), 'num']]);\n"
    "  text('pacejoining', String(p.joining));\n"
    "  text('pacewaiting', String(p.waiting));\n"
    "  if (!p.counting) return;\n"
    "  text('pacecounting', p.counting === 'api'\n"
    "       ? 'Counting by the API: ' + p.budgetUsed + ' of ' + p.maxJoining + ' used (' + p.youngNotReadyNodes +\n"
    "         ' young Nodes not Ready, ' + p.youngPendingCsrs + ' pending CSRs, ' + p.replicas + ' x ' +\n"
    "         p.unseenAdmissions + ' admitted without a Node yet)'\n"
    "       : 'Counting by join_timeout alone (' + p.budgetUsed + ' of ' + p.maxJoining + ' used): ' + p.why);\n"
    "  text('pacecsrs', 'Node CSRs pending within the hour: ' + p.pendingCsrs + ' (ceiling ' + p.maxPendingCsrs + ')' +\n"
    "       (p.csrCeiling ? ': at the ceiling, nobody is admitted' : ''));\n"
    "}\n"
    "function sums(metrics) {\n"
    "  const total = {};\n"
    "  for (const line of metrics.split('\\n')) {\n"
    "    if (!line || line[0] === '#') continue;\n"
    "    const m = /^([a-z_]+)(\\{[^}]*\\})? (\\S+)$/.exec(line);\n"
    "    if (!m) continue;\n"
    "    let key = m[1];\n"
    "    const dec = /decision=\"([a-z]+)\"/.exec(m[2] || '');\n"
    "    if (key === 'skewgate_requests_total' && dec) key += ' ' + dec[1];\n"
    "    total[key] = (total[key] || 0) + Number(m[3]);\n"
    "  }\n"
    "  return total;\n"
    "}\n"
    "const COUNTERS = [\n"
    "  ['requests admitted', 'skewgate_requests_total admit'],\n"
    "  ['requests rejected', 'skewgate_requests_total reject'],\n"
    "  ['requests passed (not gated)', 'skewgate_requests_total pass'],\n"
    "  ['gate errors', 'skewgate_requests_total error'],\n"
    "  ['held clients', 'skewgate_held_clients'],\n"
    "  ['admitted after hold', 'skewgate_admitted_after_hold_total'],\n"
    "  ['held table overflow', 'skewgate_held_overflow_total'],\n"
    "  ['upstream errors', 'skewgate_upstream_errors_total'],\n"
    "  ['open connections', 'skewgate_connections'],\n"
    "  ['source reconnects', 'skewgate_source_reconnects_total'],\n"
    "];\n"
    "function showCounters(total) {\n"
    "  const body = document.getElementById('counterrows');\n"
    "  body.replaceChildren();\n"
    "  for (const [label, key] of COUNTERS) row(body, [[label], [String(total[key] || 0), 'num']]);\n"
    "}\n"
    "async function get(path, how) {\n"
    "  const r = await fetch(path, {cache: 'no-store'});\n"
    "  if (!r.ok) throw new Error(path + ': ' + r.status);\n"
    "  return how === 'json' ? r.json() : r.text();\n"
    "}\n"
    "async function refresh() {\n"
    "  try {\n"
    "    const [v, h, m] = await Promise.all([get('/verdict', 'json'), get('/held', 'json'), get('/metrics')]);\n"
    "    showVerdict(v);\n"
    "    showHeld(h);\n"
    "    showCounters(sums(m));\n"
    "    text('error', '');\n"
    "    text('updated', 'updated ' + new Date().toISOString());\n"
    "  } catch (e) {\n"
    "    text('error', 'cannot reach the gate: ' + e.message);\n"
    "  }\n"
    "}\n"
    "refresh();\n"
    "setInterval(refresh, REFRESH_MS);\n";

/* The page runs the gate's own script and reads the gate's own answers,
 * nothing else: an injected <script> or handler would not run. */
static void page_reply(struct evhttp_request *req, const char *type, const char *body, size_t len)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Security-Policy",
                      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                      "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Cache-Control", "no-store");
    serve_reply(req, 200, "OK", type, body, len);
}

void page_html(void *arg, struct evhttp_request *req)
{
    (void)arg;
    page_reply(req, "text/html; charset=utf-8", page_html_text, sizeof page_html_text - 1);
}

void page_script(void *arg, struct evhttp_request *req)
{
    (void)arg;
    page_reply(req, "text/javascript; charset=utf-8", page_script_text, sizeof page_script_text - 1);
}

void page_style(void *arg, struct evhttp_request *req)
{
    (void)arg;
    page_reply(req, "text/css; charset=utf-8", page_style_text, sizeof page_style_text - 1);
}
