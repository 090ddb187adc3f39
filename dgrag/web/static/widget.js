/* dgrag's "Ask" widget: a button and a panel that streams cited answers from a dgrag app.
   Embed: <script src="https://HOST/widget.js" data-index="NAME"></script>
   Optional: data-lang="zh|en" (default: the page's <html lang>), data-host (default: where this file came from).
   Plain JS, no build step; the page's styles cannot reach it (a shadow root). */
(function () {
  "use strict";
  var me = document.currentScript;
  if (!me || window.__dgragWidget) return;
  window.__dgragWidget = true;
  var host = (me.getAttribute("data-host") || new URL(me.src, location.href).origin).replace(/\/$/, "");
  var index = me.getAttribute("data-index") || "";
  var lang = (me.getAttribute("data-lang") || document.documentElement.lang || navigator.language || "en")
    .toLowerCase().indexOf("zh") === 0 ? "zh" : "en";
  var T = {
    en: {ask: "Ask AI", title: "Ask the docs", ph: "Ask a question about the docs", send: "Send", close: "Close",
      wait: "Searching the docs…", up: "Helpful", down: "Not helpful", more: "What was wrong or missing? (optional)",
      thanks: "Thanks for your feedback!", fb: "Send the comment", err: "Sorry, no answer: ", src: "Sources",
      note: "Answers are written from the docs and can be wrong; check the linked pages."},
    zh: {ask: "问 AI", title: "向文档提问", ph: "输入关于文档的问题", send: "发送", close: "关闭",
      wait: "正在检索文档…", up: "有帮助", down: "没帮助", more: "哪里不对或缺了什么？（可选）",
      thanks: "谢谢反馈！", fb: "发送评论", err: "抱歉，没有得到回答：", src: "来源",
      note: "答案根据文档生成，可能有误，请查看链接的页面。"}
  }[lang];
  // a thumb drawn inline: no emoji font needed
  var THUMB = '<svg width=16 height=16 viewBox="0 0 24 24" aria-hidden=true fill=currentColor><path d="M2 21h4V9H2v12z' +
    'm20-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10a2 2 0 0 0 2 2h9c.8 0 1.5-.5' +
    ' 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z"/></svg>';
  var history = [];
  var busy = false;

  var wrap = document.createElement("div");
  wrap.setAttribute("data-dgrag-widget", "");
  var root = wrap.attachShadow({mode: "open"});
  root.innerHTML = "<style>" +
    ":host{all:initial}*{box-sizing:border-box}.b,.p{font:14px/1.5 system-ui,sans-serif}button,textarea{font:inherit}" +
    ".b{position:fixed;right:20px;bottom:20px;z-index:2147483000;border:0;border-radius:22px;padding:10px 18px;" +
    "background:#3451b2;color:#fff;cursor:pointer;box-shadow:0 2px 8px #0004}" +
    ".b:focus-visible,button:focus-visible,a:focus-visible,textarea:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}" +
    ".p{position:fixed;right:20px;bottom:72px;z-index:2147483001;width:min(420px,calc(100vw - 40px));" +
    "height:min(600px,calc(100vh - 100px));display:flex;flex-direction:column;background:#fff;color:#1f2328;" +
    "border:1px solid #d0d7de;border-radius:10px;box-shadow:0 8px 30px #0003}.p[hidden]{display:none}" +
    ".h{display:flex;align-items:center;justify-content:space-between;padding:8px 12px;border-bottom:1px solid #d0d7de}" +
    ".h h2{margin:0;font-size:15px;font-weight:600}.x{border:0;background:none;font-size:20px;cursor:pointer;padding:0 6px}" +
    ".l{flex:1;overflow:auto;padding:10px 12px}.q{margin:8px 0;font-weight:600}.a{margin:4px 0 14px}" +
    ".a pre{background:#f6f8fa;padding:8px;overflow:auto;border-radius:6px}.a code{font-family:ui-monospace,monospace;font-size:13px}" +
    ".a a{color:#3451b2}.a ul{margin:4px 0;padding-left:20px}.e{color:#b42318}.n{color:#57606a;font-size:12px;padding:0 12px}" +
    ".f{display:flex;gap:6px;align-items:center;margin-top:6px}.f button{border:1px solid #d0d7de;background:#fff;" +
    "border-radius:6px;cursor:pointer;padding:2px 8px}.f button[aria-pressed=true]{background:#ddf4ff;border-color:#3451b2}" +
    ".c{display:flex;gap:6px;margin-top:6px}.c textarea{flex:1;min-height:34px}" +
    "form{display:flex;gap:6px;padding:10px 12px;border-top:1px solid #d0d7de}" +
    "form textarea{flex:1;resize:none;height:40px;padding:6px;border:1px solid #d0d7de;border-radius:6px}" +
    "form button,.c button{border:0;border-radius:6px;background:#3451b2;color:#fff;padding:0 14px;cursor:pointer}" +
    "</style>" +
    "<button class=b type=button aria-haspopup=dialog aria-expanded=false aria-controls=dgrag-panel></button>" +
    "<div class=p id=dgrag-panel role=dialog aria-modal=true aria-labelledby=dgrag-title hidden>" +
    "<div class=h><h2 id=dgrag-title></h2><button class=x type=button>&times;</button></div>" +
    "<div class=l role=log aria-live=polite></div><p class=n></p>" +
    "<form><textarea rows=1 maxlength=2000></textarea><button type=submit></button></form></div>";
  var $ = function (s) { return root.querySelector(s); };
  var btn = $(".b"), panel = $(".p"), log = $(".l"), form = $("form"), box = $("form textarea");
  btn.textContent = T.ask;
  $("h2").textContent = T.title;
  $(".x").setAttribute("aria-label", T.close);
  $(".n").textContent = T.note;
  box.placeholder = T.ph;
  box.setAttribute("aria-label", T.ph);
  $("form button").textContent = T.send;

  function open() {
    panel.hidden = false;
    btn.setAttribute("aria-expanded", "true");
    box.focus();
  }
  function close() {
    panel.hidden = true;
    btn.setAttribute("aria-expanded", "false");
    btn.focus();
  }
  btn.addEventListener("click", function () { panel.hidden ? open() : close(); });
  $(".x").addEventListener("click", close);
  document.addEventListener("keydown", function (e) {  // Esc closes wherever the focus is
    if (e.key === "Escape" && !panel.hidden) { e.preventDefault(); close(); }
  });
  panel.addEventListener("keydown", function (e) {
    if (e.key !== "Tab") return;
    var items = Array.prototype.filter.call(panel.querySelectorAll("a[href],button,textarea"),
      function (el) { return !el.disabled && el.offsetParent !== null; });
    if (!items.length) return;
    var first = items[0], last = items[items.length - 1], at = root.activeElement;
    if (e.shiftKey && (at === first || !panel.contains(at))) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && (at === last || !panel.contains(at))) { e.preventDefault(); first.focus(); }
  });
  box.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = box.value.trim();
    if (q && !busy) { box.value = ""; ask(q); }
  });

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function safeUrl(u) { return /^https?:\/\//i.test(u) ? u : ""; }
  function link(url, text) {
    return url ? '<a href="' + esc(url) + '" target=_blank rel="noopener noreferrer">' + text + "</a>" : text;
  }
  // inline Markdown: code, bold, links (images as links), citation markers [n] as links to their source
  function inline(s, refs) {
    var out = "", last = 0, m;
    var re = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|!?\[([^\]\n]*)\]\(([^)\s]+)\)|\[(\d{1,3})\]/g;
    while ((m = re.exec(s))) {
      out += esc(s.slice(last, m.index));
      last = re.lastIndex;
      if (m[1] !== undefined) out += "<code>" + esc(m[1]) + "</code>";
      else if (m[2] !== undefined) out += "<strong>" + esc(m[2]) + "</strong>";
      else if (m[4] !== undefined) out += link(safeUrl(m[4]), esc(m[3] || m[4]));
      else out += link(safeUrl(refs[m[5]] || ""), "[" + m[5] + "]");
    }
    return out + esc(s.slice(last));
  }
  function render(md, refs) {
    var html = "", parts = md.split(/^```[^\n]*\n?/m);
    for (var i = 0; i < parts.length; i++) {
      if (i % 2) { html += "<pre><code>" + esc(parts[i].replace(/\n$/, "")) + "</code></pre>"; continue; }
      var list = false;
      parts[i].split("\n").forEach(function (line) {
        var item = /^\s*[-*] (.*)/.exec(line), head = /^#{1,6} (.*)/.exec(line);
        if (item && !list) { html += "<ul>"; list = true; }
        if (!item && list) { html += "</ul>"; list = false; }
        if (item) html += "<li>" + inline(item[1], refs) + "</li>";
        else if (head) html += "<p><strong>" + inline(head[1], refs) + "</strong></p>";
        else if (line.trim()) html += inline(line, refs) + "<br>";
        else html += "<br>";
      });
      if (list) html += "</ul>";
    }
    return html;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function ask(q) {
    busy = true;
    log.appendChild(el("div", "q", q));
    var a = el("div", "a", T.wait);
    log.appendChild(a);
    a.scrollIntoView({block: "end"});
    var text = "", refs = {}, done = null;
    fetch(host + "/chat/stream", {
      method: "POST", headers: {"Content-Type": "application/json", "X-Dgrag-Channel": "widget"},
      body: JSON.stringify({query: q, index: index || null, history: history.slice(-12)})
    }).then(function (res) {
      if (!res.ok) {
        return res.json().then(function (b) { throw new Error(b.error && (b.error.message || b.error) || res.status); },
          function () { throw new Error("HTTP " + res.status); });
      }
      var reader = res.body.getReader(), dec = new TextDecoder(), buf = "";
      function event(line) {
        if (!line.trim()) return;
        var ev = JSON.parse(line);
        if (ev.type === "references") (ev.chunks || []).forEach(function (c, i) { if (!refs[i + 1]) refs[i + 1] = c.source_url; });
        else if (ev.type === "text") { text += ev.text; a.innerHTML = render(text, refs); }
        else if (ev.type === "done") {
          done = ev;
          (ev.meta && ev.meta.references || []).forEach(function (r) { refs[r.n] = r.source_url; });
          text = ev.llm_response || text;
          a.innerHTML = render(text, refs);
        } else if (ev.type === "error") throw new Error(ev.error);
      }
      function pump() {
        return reader.read().then(function (r) {
          buf += dec.decode(r.value || new Uint8Array(), {stream: !r.done});
          var lines = buf.split("\n");
          buf = r.done ? "" : lines.pop();
          lines.forEach(event);
          if (!r.done) return pump();
        });
      }
      return pump();
    }).then(function () {
      if (!done) throw new Error("the answer ended early");
      if (!a.querySelector("a[href]")) sources(a, done);
      history.push({role: "user", content: q}, {role: "assistant", content: text.slice(0, 2000)});  // under the body limit
      if (done.answer_id) thumbs(a, done.answer_id);
    }).catch(function (err) {
      a.textContent = T.err + (err && err.message || err);
      a.className = "a e";
      a.setAttribute("role", "alert");
    }).then(function () { busy = false; a.scrollIntoView({block: "end"}); });
  }
  function sources(a, done) {
    var rows = (done.meta && done.meta.references || []).filter(function (r) { return safeUrl(r.source_url || ""); });
    if (!rows.length) return;
    a.appendChild(el("p", "", T.src));
    var ul = el("ul");
    rows.slice(0, 5).forEach(function (r) {
      var li = el("li");
      li.innerHTML = link(r.source_url, esc("[" + r.n + "] " + (r.section || r.title || r.source_url)));
      ul.appendChild(li);
    });
    a.appendChild(ul);
  }
  function thumbs(a, id) {
    var bar = el("div", "f"), up = el("button"), down = el("button"), said = el("span");
    up.innerHTML = THUMB;
    down.innerHTML = THUMB.replace("<svg", "<svg style='transform:rotate(180deg)'");
    [[up, T.up, 1], [down, T.down, -1]].forEach(function (t) {
      t[0].type = "button";
      t[0].setAttribute("aria-label", t[1]);
      t[0].setAttribute("aria-pressed", "false");
      t[0].addEventListener("click", function () {
        up.setAttribute("aria-pressed", String(t[2] === 1));
        down.setAttribute("aria-pressed", String(t[2] === -1));
        send(id, t[2], "", said);
        if (!bar.nextSibling) comment(a, id, said);
      });
      bar.appendChild(t[0]);
    });
    said.setAttribute("role", "status");
    bar.appendChild(said);
    a.appendChild(bar);
  }
  function comment(a, id, said) {
    var row = el("div", "c"), area = el("textarea"), go = el("button", "", T.send);
    area.placeholder = T.more;
    area.setAttribute("aria-label", T.more);
    area.maxLength = 2000;
    go.type = "button";
    go.setAttribute("aria-label", T.fb);
    go.addEventListener("click", function () {
      if (area.value.trim()) { send(id, 0, area.value.trim(), said); row.remove(); box.focus(); }
    });
    row.appendChild(area);
    row.appendChild(go);
    a.appendChild(row);
  }
  function send(id, rating, text, said) {
    fetch(host + "/feedback", {
      method: "POST", headers: {"Content-Type": "application/json", "X-Dgrag-Channel": "widget"},
      body: JSON.stringify({answer_id: id, rating: rating, comment: text})
    }).then(function (res) {
      said.textContent = res.ok ? T.thanks : T.err + res.status;
    }, function (err) { said.textContent = T.err + err.message; });
  }

  (document.body || document.documentElement).appendChild(wrap);
})();
