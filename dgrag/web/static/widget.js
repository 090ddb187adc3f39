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
      note: "Answers are written from the docs and can be wrong; check the linked pages.", cite: "Source",
      copy: "Copy", copied: "Copied", select: "Selected: press Ctrl+C", code: "code", api: "API",
      nc: "The docs don't seem to cover this. The closest sections:", follow: "You might also ask",
      params: ["Parameter", "Type", "Required", "Description"], yes: "Yes", no: "No", returns: "Returns",
      errors: ["Error code", "Message"], since: "Since"},
    zh: {ask: "问 AI", title: "向文档提问", ph: "输入关于文档的问题", send: "发送", close: "关闭",
      wait: "正在检索文档…", up: "有帮助", down: "没帮助", more: "哪里不对或缺了什么？（可选）",
      thanks: "谢谢反馈！", fb: "发送评论", err: "抱歉，没有得到回答：", src: "来源",
      note: "答案根据文档生成，可能有误，请查看链接的页面。", cite: "来源",
      copy: "复制", copied: "已复制", select: "已选中：请按 Ctrl+C", code: "代码", api: "接口",
      nc: "文档中似乎没有涉及这个问题。最接近的章节：", follow: "你也可以问",
      params: ["参数", "类型", "必填", "说明"], yes: "是", no: "否", returns: "返回值",
      errors: ["错误码", "错误信息"], since: "起始版本"}
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
    ".a pre{background:#f6f8fa;padding:8px;margin:0 0 6px;overflow:auto;border-radius:6px}" +
    ".a code{font-family:ui-monospace,monospace;font-size:13px}.a p{margin:4px 0}" +
    ".a a{color:#3451b2}.a ul{margin:4px 0;padding-left:20px}.e{color:#b42318}.n{color:#57606a;font-size:12px;padding:0 12px}" +
    ".nc{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:6px 10px;margin-bottom:8px}" +
    ".k{margin:6px 0}.kb{display:flex;justify-content:space-between;align-items:center;background:#eaeef2;" +
    "border-radius:6px 6px 0 0;padding:2px 8px;font-size:12px;color:#57606a}.k pre{border-radius:0 0 6px 6px}" +
    ".kb button,.fu button{border:1px solid #d0d7de;background:#fff;border-radius:6px;cursor:pointer;padding:1px 8px}" +
    // tables fit the panel (long words wrap anywhere), long code and tall pictures scroll or shrink
    ".t{overflow:auto;margin:6px 0}table{border-collapse:collapse;font-size:12px;width:100%}th,td{border:1px solid " +
    "#d0d7de;padding:3px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere;min-width:5em}" +
    "th{background:#f6f8fa;white-space:nowrap}" +
    ".k pre{max-height:240px}img{max-height:240px;object-fit:contain}" +
    ".api{border:1px solid #d0d7de;border-radius:8px;padding:6px 10px;margin:8px 0}" +
    ".api .v{color:#57606a;margin-left:8px}" +
    ".w{font-size:12px;color:#57606a}figure{margin:6px 0}img{max-width:100%;border:1px solid #d0d7de}" +
    ".s{margin:8px 0}summary{cursor:pointer;font-weight:600}.fu{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}" +
    ".fu p{width:100%;margin:0;font-weight:600}.fu button{text-align:left;color:#3451b2}" +
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

  // ---- drawing: DOM nodes with their text set as text, so nothing from the docs or the answer
  // is ever parsed as HTML (innerHTML only for this file's own constant markup)
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }
  function put(parent, child) { if (child) parent.appendChild(child); return child; }
  function safeUrl(u) { return /^https?:\/\//i.test(u || "") ? u : ""; }
  // a picture from the web or from the app itself (its /images/...), nothing else (no data:, javascript:)
  function imageUrl(u) { return safeUrl(u) || (/^\/(?!\/)/.test(u || "") ? host + u : ""); }
  function link(url, text) {
    if (!safeUrl(url)) return el("span", "", text);
    var e = el("a", "", text);
    e.href = url;
    e.target = "_blank";
    e.rel = "noopener noreferrer";
    return e;
  }
  // the docs' Markdown holds entities, <sup>/<br> and backslash escapes ("Array&lt;T&gt;", "\<Text>"):
  // shown as the text they stand for; any other tag stays visible text
  var ENTITY = {lt: "<", gt: ">", amp: "&", quot: '"', apos: "'", nbsp: " "};
  function plain(s) {
    return String(s).replace(/<br\s*\/?>/gi, " ").replace(/<\/?sup>/gi, "").replace(/\\([\\`*_[\]<>|#])/g, "$1")
      .replace(/&(?:#x([0-9a-f]{1,6})|#(\d{1,7})|([a-z]{2,6}));/gi, function (m, hex, dec, name) {
        var n = hex ? parseInt(hex, 16) : dec ? +dec : -1;
        return n < 0 ? ENTITY[name.toLowerCase()] || m : n > 0 && n < 0x110000 ? String.fromCodePoint(n) : m;
      });
  }
  // a citation [n]: a link to its numbered source's page, named by its section (never its id)
  function cite(n, refs) {
    var r = refs[n] || {}, e = link(r.url, "[" + n + "]");
    e.className = "r";
    if (r.section) { e.title = r.section; e.setAttribute("aria-label", T.cite + " " + n + ": " + r.section); }
    return e;
  }
  // inline Markdown: code, bold, links, pictures (named), citation markers [n]
  function inline(s, refs) {
    var out = document.createDocumentFragment(), last = 0, m;
    var re = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|(!?)\[([^\]\n]*)\]\(([^)\s]+)\)|\[(\d{1,3})\]/g;
    while ((m = re.exec(s))) {
      out.append(plain(s.slice(last, m.index)));
      last = re.lastIndex;
      if (m[1] !== undefined) put(out, el("code", "", m[1]));
      else if (m[2] !== undefined) put(out, el("strong", "", plain(m[2])));
      else if (m[5] !== undefined) put(out, m[3] ? picture(m[4], m[5]) : link(m[5], plain(m[4] || m[5])));
      else put(out, cite(m[6], refs));
    }
    out.append(plain(s.slice(last)));
    return out;
  }
  // a picture inside the docs' Markdown: its path is relative to a page of the docs, which the widget
  // cannot resolve; named by its alt text, else its file name, so that a table of pictures is not blank
  function picture(alt, src) { return el("span", "", plain(alt || src.split("/").pop())); }
  function cells(line) {
    // "\|" is a cell's own bar (no lookbehind: older Safari would reject the whole file)
    return line.trim().replace(/^\||\|$/g, "").replace(/\\\|/g, "\0").split("|")
      .map(function (c) { return c.replace(/\0/g, "\\|").trim(); });
  }
  // a table; `fill` puts a cell's content in: Markdown for the docs' tables, plain text for the API
  // card's (its fields are plain already: "Array<TouchObject>" is no tag)
  function table(header, rows, fill) {
    var box = el("div", "t"), t = put(box, el("table")), tr = put(put(t, el("thead")), el("tr"));
    var body = put(t, el("tbody"));
    header.forEach(function (h) { fill(put(tr, el("th")), h); });
    rows.forEach(function (row) {
      var r = put(body, el("tr"));
      header.forEach(function (_, i) { fill(put(r, el("td")), row[i] || ""); });
    });
    return box;
  }
  function asMarkdown(refs) { return function (cell, s) { cell.appendChild(inline(s, refs)); }; }
  function asText(cell, s) { cell.textContent = s; }
  // a code block: its language named, a Copy button (the clipboard; else the code is selected for Ctrl+C)
  function codeBlock(code, language) {
    var box = el("div", "k"), bar = put(box, el("div", "kb")), copy = el("button", "", T.copy), pre = el("pre");
    put(bar, el("span", "", language || T.code));
    copy.type = "button";
    copy.addEventListener("click", function () {
      var done = function () {
        copy.textContent = T.copied;
        setTimeout(function () { copy.textContent = T.copy; }, 2000);
      };
      var select = function () { getSelection().selectAllChildren(pre); copy.textContent = T.select; };
      navigator.clipboard ? navigator.clipboard.writeText(code).then(done, select) : select();
    });
    put(bar, copy);
    put(put(box, pre), el("code", "", code));
    return box;
  }
  // a block of Markdown: fenced code, tables, lists, headings, paragraphs
  function render(md, refs) {
    var out = document.createDocumentFragment(), lines = md.split("\n"), i = 0, m;
    while (i < lines.length) {
      var line = lines[i];
      if ((m = /^\s*(`{3,}|~{3,})\s*([\w+-]*)/.exec(line))) {
        var code = [];
        for (i++; i < lines.length && lines[i].trim().indexOf(m[1]) !== 0; i++) code.push(lines[i]);
        put(out, codeBlock(code.join("\n"), m[2]));
        i++;
      } else if (/^\s*\|/.test(line)) {
        var rows = [];
        for (; i < lines.length && /^\s*\|/.test(lines[i]); i++) rows.push(cells(lines[i]));
        var ruled = rows.length > 1 && rows[1].every(function (c) { return /^:?-+:?$/.test(c); });
        put(out, table(rows[0], rows.slice(ruled ? 2 : 1), asMarkdown(refs)));
      } else if (/^\s*[-*] /.test(line)) {
        var ul = put(out, el("ul"));
        for (; i < lines.length && (m = /^\s*[-*] (.*)/.exec(lines[i])); i++) {
          put(ul, el("li")).appendChild(inline(m[1], refs));
        }
      } else if ((m = /^#{1,6} (.*)/.exec(line))) {  // a heading: bold, no <h*> inside the panel's outline
        put(put(out, el("p")), el("strong")).appendChild(inline(m[1], refs));
        i++;
      } else if (line.trim()) {
        var p = put(out, el("p"));
        for (; i < lines.length && lines[i].trim() && !/^\s*(\||[-*] |`{3}|~{3}|#{1,6} )/.test(lines[i]); i++) {
          if (p.firstChild) put(p, el("br"));
          p.appendChild(inline(lines[i], refs));
        }
      } else i++;
    }
    return out;
  }

  // ---- the answer's components (docs/answers.md), in the order the server gives them
  function where(c, refs) {  // "[n] section", linked to the section's page
    var p = el("p", "w");
    put(p, cite(c.n, refs));
    p.append(" ");
    put(p, link(c.url, c.section || c.title || ""));
    return p;
  }
  function answerCard(c, refs, all) {
    var box = el("div", "ac"), md = c.markdown || "";
    if (c.answerable === false) {
      put(box, notCovered(all));
      // the server's own "not covered" sentence (the card's `notice`): the notice above says it, linked
      if (c.notice && md.indexOf(c.notice) === 0) md = md.slice(c.notice.length).replace(/^\s+/, "");
    }
    box.appendChild(render(md, refs));
    return box;
  }
  function notCovered(all) {  // the closest sections are the first sources (the server ranks them so)
    var box = el("div", "nc"), src = all.filter(function (c) { return c.type === "sources"; })[0];
    box.setAttribute("role", "note");
    put(box, el("strong", "", T.nc));
    var ul = put(box, el("ul"));
    (src ? src.items : []).slice(0, 3).forEach(function (s) {
      put(put(ul, el("li")), link(s.url, s.section || s.title));
    });
    return box;
  }
  function apiCard(c, refs) {
    var box = el("section", "api"), head = put(box, el("p", "ah"));
    box.setAttribute("aria-label", T.api + " " + c.name);
    put(put(head, el("strong")), el("code", "", c.name));
    if (c.since) put(head, el("span", "v", T.since + " " + c.since));
    if (c.signature) put(put(box, el("pre")), el("code", "", c.signature));
    var params = c.params || [], flag = function (v) { return v === true ? T.yes : v === false ? T.no : ""; };
    var rows = params.map(function (p) { return [p.name, p.type, flag(p.required), p.description]; });
    var keep = [0, 1, 2, 3].filter(function (i) {  // no column nobody fills (the server's chat does the same)
      return i === 0 || i === 3 || rows.some(function (r) { return r[i]; });
    });
    var pick = function (r) { return keep.map(function (i) { return r[i]; }); };
    if (rows.length) put(box, table(pick(T.params), rows.map(pick), asText));
    if (c.returns) { var ret = put(box, el("p")); put(ret, el("strong", "", T.returns + ": ")); ret.append(c.returns); }
    var errors = (c.errors || []).map(function (e) { return [e.code, e.message]; });
    if (errors.length) put(box, table(T.errors, errors, asText));
    put(box, where(c, refs));
    return box;
  }
  function codeCard(c, refs) {
    var box = el("div");
    put(box, codeBlock(c.code, c.language));
    put(box, where(c, refs));
    return box;
  }
  function tableCard(c, refs) {
    var box = el("div");
    put(box, table(c.header, c.rows, asMarkdown(refs)));
    put(box, where(c, refs));
    return box;
  }
  function image(c, refs) {
    var url = imageUrl(c.url);
    if (!url) return null;
    var fig = el("figure"), img = put(fig, el("img"));
    img.src = url;
    img.alt = (c.alt || "").split("\n")[0].slice(0, 200);
    img.loading = "lazy";
    // its `url` is the picture's own: the caption names the section without it
    put(put(fig, el("figcaption")), where({n: c.n, section: c.section, title: c.title}, refs));
    return fig;
  }
  function sources(c) {  // folded: the answer stays short; each numbered source opens its section
    var box = el("details", "s"), ul = el("ul");
    put(box, el("summary", "", T.src + " (" + c.items.length + ")"));
    c.items.forEach(function (s) {
      var li = put(ul, el("li"));
      li.append("[" + s.n + "] ");
      put(li, link(s.url, s.section || s.title));
    });
    put(box, ul);
    return c.items.length ? box : null;
  }
  function followups(c) {  // each asks its question here, in the widget
    var box = el("div", "fu");
    put(box, el("p", "", T.follow));
    c.items.slice(0, 3).forEach(function (f) {
      var b = put(box, el("button", "", f.query));
      b.type = "button";
      b.title = f.section;
      b.addEventListener("click", function () { if (!busy) ask(f.query); });
    });
    return c.items.length ? box : null;
  }
  var DRAW = {answer: answerCard, api: apiCard, code: codeCard, table: tableCard, image: image, sources: sources,
    followups: followups};
  function components(a, list, refs) {
    a.textContent = "";
    list.forEach(function (c) { if (DRAW[c.type]) put(a, DRAW[c.type](c, refs, list)); });
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
        if (ev.type === "references") {
          (ev.chunks || []).forEach(function (c, i) { if (!refs[i + 1]) refs[i + 1] = {url: c.source_url}; });
        } else if (ev.type === "text") {
          text += ev.text;
          a.textContent = "";
          a.appendChild(render(text, refs));
        } else if (ev.type === "done") {
          done = ev;
          (ev.meta && ev.meta.references || []).forEach(function (r) {
            refs[r.n] = {url: r.source_url, section: r.section};
          });
          text = ev.llm_response || text;
          // the components, else (a server without them) the answer's text
          components(a, ev.components || ev.meta && ev.meta.components || [{type: "answer", markdown: text}], refs);
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
      history.push({role: "user", content: q}, {role: "assistant", content: text.slice(0, 2000)});  // under the body limit
      if (done.answer_id) thumbs(a, done.answer_id);
    }).catch(function (err) {
      a.textContent = T.err + (err && err.message || err);
      a.className = "a e";
      a.setAttribute("role", "alert");
    }).then(function () { busy = false; a.scrollIntoView({block: "end"}); });
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
