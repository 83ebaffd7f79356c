/* The edge console: models, pipelines, rules, events, charts and the device, from the edge server's API
   (EDGE_API.md). Plain script, no build step, nothing loaded from elsewhere. */
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var TOKEN_KEY = "modeldesk-edge-token";
  var state = { models: [], pipelines: [], workspace: [], eventsTotal: 0, tab: "overview", live: null,
                connected: null, liveUrl: null };

  // -- the token: read once from ?token=, kept in sessionStorage, never left in the address bar --------
  (function takeToken() {
    var params = new URLSearchParams(location.search);
    if (params.has("token")) {
      sessionStorage.setItem(TOKEN_KEY, params.get("token"));
      params.delete("token");
      var rest = params.toString();
      history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
    }
  })();
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
  $("token").value = token();
  $("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token-form").classList.remove("needed");
    hideNotice();
    refreshAll();
  });

  // -- calls -------------------------------------------------------------------------------------------
  function refusal(status, message) {
    // One sentence that says what to do.
    if (status === 401 || (status === 403 && /token/i.test(message || ""))) {
      $("token-form").classList.add("needed");
      return token() ? "The server refused this access token: enter the token the edge server was started with, at the top right."
                     : "This server needs its access token: enter it at the top right (or open the page with ?token=… at the end of the address).";
    }
    if (status === 403) return (message || "Refused") + " Open the console from the server's own address.";
    if (status === 413) return "That is too large for the server; choose a smaller file.";
    if (status === 0) return "The edge server does not answer: check that “modeldesk edge serve” is still running, then reload this page.";
    return message || ("The server answered with error " + status + "; the Log under Device and log says more.");
  }
  function api(path, options) {
    options = options || {};
    var headers = options.body !== undefined ? { "Content-Type": "application/json" } : {};
    if (token()) headers.Authorization = "Bearer " + token();
    var init = { method: options.method || "GET", headers: headers, cache: "no-store" };
    if (options.body !== undefined) init.body = JSON.stringify(options.body);
    return fetch(path, init).catch(function () {
      var error = new Error(refusal(0)); error.status = 0; throw error;
    }).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text || response.statusText }; }
        if (!response.ok) {
          var detail = body && (body.error || body.detail || body.message);
          var error = new Error(refusal(response.status, typeof detail === "string" ? detail : ""));
          error.status = response.status;
          throw error;
        }
        return body;
      });
    });
  }
  function change(path, method, body, done) {
    // A state-changing call: on success refresh the page, on refusal say what to do.
    return api(path, { method: method, body: body }).then(function (answer) {
      hideNotice();
      if (done) done(answer);
      refreshStatus();
      return answer;
    }).catch(function (error) { notice(error.message); throw error; });
  }
  function image(img, path, onMissing) {
    // Images come through fetch so that the token header goes with them too.
    var headers = token() ? { Authorization: "Bearer " + token() } : {};
    return fetch(path, { headers: headers, cache: "no-store" }).then(function (response) {
      if (!response.ok) { if (onMissing) onMissing(response.status); return false; }
      return response.blob().then(function (blob) {
        var old = img.dataset.url;
        img.src = img.dataset.url = URL.createObjectURL(blob);
        if (old) setTimeout(function () { URL.revokeObjectURL(old); }, 1000);
        return true;
      });
    }).catch(function () { if (onMissing) onMissing(0); return false; });
  }

  // -- small helpers -------------------------------------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }
  function pct(p) { return typeof p === "number" ? Math.round(p * 100) + "%" : "—"; }
  function num(x, digits) { return typeof x === "number" ? x.toFixed(digits || 0) : "—"; }
  function when(iso) {
    if (!iso) return "—";
    var d = new Date(typeof iso === "number" ? iso * 1000 : iso);  // ISO text, or seconds since 1970
    if (isNaN(d)) return String(iso);
    var today = new Date().toDateString() === d.toDateString();
    return (today ? "" : d.toLocaleDateString() + " ") + d.toLocaleTimeString();
  }
  function bytes(n) {
    if (typeof n !== "number") return "—";
    var units = ["B", "KB", "MB", "GB", "TB"], i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return n.toFixed(n >= 10 || i === 0 ? 0 : 1) + " " + units[i];
  }
  function notice(message, ok) {
    $("notice-text").textContent = message;
    $("notice").className = "notice" + (ok ? " ok" : "");
    $("notice").hidden = false;
    clearTimeout(notice.timer);
    if (ok) notice.timer = setTimeout(hideNotice, 4000);
  }
  function hideNotice() { $("notice").hidden = true; }
  $("notice-close").addEventListener("click", hideNotice);
  function fillSelect(select, items, keep) {
    // items: [[value, text], ...]; the chosen value is kept when it is still there
    var before = keep === undefined ? select.value : keep;
    select.innerHTML = "";
    items.forEach(function (it) { select.appendChild(el("option", { value: it[0], text: it[1] })); });
    if (items.some(function (it) { return String(it[0]) === String(before); })) select.value = before;
  }
  var STATE_WORDS = {
    starting: ["wait", "Starting"], running: ["ok", "Running"], reconnecting: ["wait", "Reconnecting"],
    stopped: ["off", "Stopped"], finished: ["off", "Finished (the video ended)"], failed: ["bad", "Failed"]
  };
  function statePill(s) {
    var w = STATE_WORDS[s] || ["off", s || "unknown"];
    return el("span", { cls: "pill pill-" + w[0] }, [el("span", { cls: "dot" }), w[1]]);
  }
  var KIND_WORDS = { file: "video file", folder: "folder", camera: "camera", stream: "stream" };
  function answerWords(answer) {
    if (!answer) return "—";
    if (answer.boxes) return answer.boxes.length + (answer.boxes.length === 1 ? " object" : " objects");
    if (answer.sure === false) return "not sure";
    return (answer.label || "?") + " " + pct(answer.score);
  }
  function ruleWords(rule) {
    var w = rule.when || {};
    var text = w.kind === "not_sure" ? "the model is less than " + pct(w.score) + " sure"
      : w.kind === "count" ? "at least " + (w.count || 1) + " × “" + w.label + "” at " + pct(w.score) + " or more"
      : w.kind === "score" ? "the anomaly score reaches " + num(w.score, 2)
      : "“" + w.label + "” at " + pct(w.score) + " or more";
    var hold = rule.hold_s ? rule.hold_s + " s" : (rule.hold_frames || 1) + ((rule.hold_frames || 1) === 1 ? " frame" : " frames in a row");
    text += ", for " + hold + "; then waits " + (rule.cooldown_s || 0) + " s";
    var acts = (rule.actions || []).map(function (a) {
      return a.type === "webhook" ? "sends to " + a.url : a.type === "save_frame" ? "saves the picture in " + a.folder
        : "writes to " + a.path;
    });
    return text + (acts.length ? "; " + acts.join(", ") : "");
  }

  // -- tabs --------------------------------------------------------------------------------------------
  function showTab(name) {
    if (!$("page-" + name)) name = "overview";
    state.tab = name;
    document.querySelectorAll(".page").forEach(function (p) { p.hidden = p.id !== "page-" + name; });
    document.querySelectorAll("#tabs a").forEach(function (a) { a.classList.toggle("active", a.dataset.tab === name); });
    refreshTab();
  }
  window.addEventListener("hashchange", function () { showTab(location.hash.slice(1)); });

  // -- the rule form (one template, used on the Overview and in the live view) ------------------------------
  function ruleForm(slot) {
    var node = $("rule-template").content.firstElementChild.cloneNode(true);
    slot.appendChild(node);
    var q = function (name) { return node.querySelector("[data-r=" + name + "]"); };
    function kindChanged() {
      var kind = q("kind").value;
      node.querySelectorAll("[data-show]").forEach(function (f) { f.hidden = f.dataset.show.split(" ").indexOf(kind) < 0; });
      q("score-words").firstChild.textContent = kind === "not_sure" ? "Less sure than " : kind === "score" ? "Anomaly score at least " : "Confidence at least ";
      scoreChanged();
    }
    function scoreChanged() {
      var v = Number(q("score").value);
      q("score-value").textContent = q("kind").value === "score" ? v.toFixed(2) : pct(v);
    }
    q("kind").addEventListener("change", kindChanged);
    q("score").addEventListener("input", scoreChanged);
    node.querySelectorAll("[data-a]").forEach(function (box) {
      var path = node.querySelector("[data-p=" + box.dataset.a + "]");
      path.disabled = true;
      box.addEventListener("change", function () { path.disabled = !box.checked; if (box.checked) path.focus(); });
    });
    kindChanged();
    return {
      setLabels: function (labels, detector) {
        fillSelect(q("label"), (labels || []).map(function (l) { return [l, l]; }));
        q("kind").querySelector("[value=count]").hidden = !detector;
        if (!detector && q("kind").value === "count") { q("kind").value = "label"; kindChanged(); }
      },
      read: function () {
        var kind = q("kind").value;
        var rule = { when: { kind: kind, score: Number(q("score").value) },
                     hold_frames: 1, hold_s: 0,
                     cooldown_s: Math.max(0, Number(q("cooldown").value) || 0), actions: [] };
        if (q("hold-unit").value === "seconds") rule.hold_s = Math.max(0, Number(q("hold").value) || 0);
        else rule.hold_frames = Math.max(1, parseInt(q("hold").value, 10) || 1);
        if (kind === "label" || kind === "count") {
          if (!q("label").value) throw new Error("Pick the label the rule looks for (the model's labels are listed).");
          rule.when.label = q("label").value;
        }
        if (kind === "count") rule.when.count = Math.max(1, parseInt(q("count").value, 10) || 1);
        node.querySelectorAll("[data-a]").forEach(function (box) {
          if (!box.checked) return;
          var type = box.dataset.a, value = node.querySelector("[data-p=" + type + "]").value.trim();
          var words = { save_frame: "the folder to save pictures in", jsonl: "the JSON-lines file", csv: "the CSV file", webhook: "the web address" };
          if (!value) throw new Error("Write " + words[type] + ", or untick that action.");
          if (type === "webhook" && !/^https?:\/\//i.test(value)) throw new Error("The web address must start with http:// or https://.");
          var action = { type: type };
          action[type === "webhook" ? "url" : type === "save_frame" ? "folder" : "path"] = value;
          rule.actions.push(action);
        });
        return rule;
      }
    };
  }
  var pipelineRule = ruleForm($("rule-slot"));
  var liveRule = ruleForm($("rule-slot-live"));
  $("with-rule").addEventListener("change", function () {
    $("rule-slot").parentNode.classList.toggle("off", !$("with-rule").checked);
  });
  function modelByName(name) { return state.models.filter(function (m) { return m.name === name; })[0]; }
  function isDetector(model) { return !!model && /detect/i.test(model.task || ""); }

  // -- overview -----------------------------------------------------------------------------------------------
  function renderModels() {
    var box = $("models");
    box.innerHTML = "";
    $("models-empty").hidden = state.models.length > 0;
    state.models.forEach(function (m) {
      var versions = (m.versions || []).slice().sort(function (a, b) { return b.version - a.version; });
      var select = el("select", { "aria-label": "Version of " + m.name });
      versions.forEach(function (v) {
        var text = "Version " + v.version + (v.version === m.live_version ? " (live)" : "") + " · " + (v.model_id || v.source || "") +
          (v.added ? " · added " + when(v.added) : "");
        select.appendChild(el("option", { value: v.version, text: text }));
      });
      select.value = m.live_version;
      var live = el("button", { type: "button", cls: "btn-small", text: "Make live", onclick: function () {
        var v = Number(select.value);
        var back = v < m.live_version;
        change("v1/edge/models/" + encodeURIComponent(m.name) + "/live", "POST", { version: v }, function () {
          notice((back ? "Rolled back: " : "Switched: ") + m.name + " now answers with version " + v + ".", true);
        }).catch(function () {});
      } });
      function sync() { live.disabled = Number(select.value) === m.live_version; }
      select.addEventListener("change", sync);
      sync();
      var remove = el("button", { type: "button", cls: "btn-small danger", text: "Remove", onclick: function () {
        if (!confirm("Remove " + m.name + " and all its versions from this server?")) return;
        change("v1/edge/models/" + encodeURIComponent(m.name), "DELETE", undefined, function () {
          notice(m.name + " was removed.", true);
        }).catch(function () {});
      } });
      var labels = el("div", { cls: "model-labels" });
      (m.labels || []).slice(0, 12).forEach(function (l) { labels.appendChild(el("span", { text: l })); });
      if ((m.labels || []).length > 12) labels.appendChild(el("span", { text: "+" + (m.labels.length - 12) + " more" }));
      var used = state.pipelines.filter(function (p) { return p.model === m.name; }).length;
      box.appendChild(el("div", { cls: "model" }, [
        el("div", { cls: "model-top" }, [
          el("span", { cls: "model-name", text: m.name }),
          el("span", { cls: "chip", text: "version " + m.live_version + " live" }),
          el("span", { cls: "grow" }), remove
        ]),
        el("div", { cls: "model-meta", text: [(m.task || "").replace(/-/g, " "), (m.input_kind || "") + " input",
          (m.versions || []).length + ((m.versions || []).length === 1 ? " version" : " versions"),
          used ? "used by " + used + (used === 1 ? " pipeline" : " pipelines") : "not watching anything"].join(" · ") }),
        labels,
        el("div", { cls: "model-versions" }, [select, live])
      ]));
    });
    var names = state.models.map(function (m) { return [m.name, m.name + " (version " + m.live_version + ")"]; });
    fillSelect($("pipeline-model"), names.length ? names : [["", "Add a model first (the form above)"]]);
    pipelineModelChanged();
  }
  function pipelineModelChanged() {
    var m = modelByName($("pipeline-model").value);
    pipelineRule.setLabels(m ? m.labels : [], isDetector(m));
  }
  $("pipeline-model").addEventListener("change", pipelineModelChanged);

  function renderPipelines() {
    var body = $("pipelines");
    body.innerHTML = "";
    $("pipelines-empty").hidden = state.pipelines.length > 0;
    $("pipelines-table").hidden = state.pipelines.length === 0;
    state.pipelines.forEach(function (p) {
      var running = ["starting", "running", "reconnecting"].indexOf(p.state) >= 0;
      var toggle = el("button", { type: "button", cls: "btn-small", text: running ? "Stop" : "Start", onclick: function () {
        change("v1/edge/pipelines/" + encodeURIComponent(p.id) + "/" + (running ? "stop" : "start"), "POST", {}).catch(function () {});
      } });
      var view = el("button", { type: "button", cls: "btn-small", text: "Watch", onclick: function () {
        state.live = p.id; location.hash = "live";
      } });
      var del = el("button", { type: "button", cls: "btn-small danger", text: "Delete", onclick: function () {
        if (!confirm("Delete the pipeline " + (p.name || p.id) + "? Its events are kept.")) return;
        change("v1/edge/pipelines/" + encodeURIComponent(p.id), "DELETE").catch(function () {});
      } });
      var stateCell = el("td", {}, [statePill(p.state)]);
      if (p.last_error) stateCell.appendChild(el("span", { cls: "why", text: p.last_error }));
      body.appendChild(el("tr", {}, [
        el("td", {}, [el("b", { text: p.name || p.id }), el("div", { cls: "hint", text: (p.rules || []).length + ((p.rules || []).length === 1 ? " rule" : " rules") })]),
        el("td", { cls: "src", title: p.source, text: (KIND_WORDS[p.source_kind] || p.source_kind || "") + ": " + p.source }),
        el("td", { text: p.model + (p.model_version ? " v" + p.model_version : "") }),
        stateCell,
        el("td", { cls: "num", title: p.source_kind === "file" ? "A video file is read as fast as the model answers; the cap is per second of video" : "",
                   text: num(p.fps, 1) + (p.source_kind === "file" ? "" : " of " + (p.fps_cap || "—")) }),
        el("td", { cls: "num opt", text: String(p.frames || 0) }),
        el("td", { cls: "num opt", title: "Frames skipped because the model was still busy", text: String(p.dropped || 0) }),
        el("td", { cls: "opt", text: answerWords(p.last_answer) }),
        el("td", { cls: "btns" }, [view, toggle, del])
      ]));
    });
    var running = state.pipelines.filter(function (p) { return p.state === "running"; }).length;
    $("summary").textContent = state.models.length + (state.models.length === 1 ? " model · " : " models · ") +
      running + " of " + state.pipelines.length + " pipelines running · " + state.eventsTotal + " events";
    fillSelect($("live-pipeline"), state.pipelines.map(function (p) { return [p.id, p.name || p.id]; }), state.live || undefined);
    fillSelect($("f-pipeline"), [["", "All"]].concat(state.pipelines.map(function (p) { return [p.id, p.name || p.id]; })));
    fillSelect($("f-model"), [["", "All"]].concat(state.models.map(function (m) { return [m.name, m.name]; })));
    var labels = {};
    state.models.forEach(function (m) { (m.labels || []).forEach(function (l) { labels[l] = true; }); });
    fillSelect($("f-label"), [["", "Any"]].concat(Object.keys(labels).sort().map(function (l) { return [l, l]; })));
  }

  // add a model
  function modelFrom() { return document.querySelector("input[name=model-from]:checked").value; }
  document.querySelectorAll("input[name=model-from]").forEach(function (r) {
    r.addEventListener("change", function () {
      $("ws-field").hidden = modelFrom() !== "workspace";
      $("path-field").hidden = modelFrom() !== "path";
    });
  });
  function renderWorkspace() {
    var items = state.workspace.map(function (m) {
      var metric = m.metrics || {};
      var score = typeof metric.accuracy === "number" ? ", accuracy " + pct(metric.accuracy)
        : typeof metric.map50 === "number" ? ", mAP " + metric.map50.toFixed(2) : "";
      var template = String(m.template || m.task || "").split("/").pop();
      return [m.id, (m.project || "?") + " · " + template + " template" + score + " · trained " + when(m.created)];
    });
    fillSelect($("ws-model"), items);
    $("ws-hint").textContent = items.length ? "Models trained in the workspace this server was started with."
      : "This server was started without a workspace (or it has no model yet): add a model from a folder instead.";
    if (!items.length && modelFrom() === "workspace") { document.querySelector("input[value=path]").click(); }
  }
  $("ws-model").addEventListener("change", suggestName);
  function suggestName() {
    if ($("model-name").dataset.typed) return;
    var m = state.workspace.filter(function (w) { return w.id === $("ws-model").value; })[0];
    if (m && m.project) $("model-name").value = String(m.project).toLowerCase().replace(/[^a-z0-9_.\-]+/g, "-").replace(/^-+|-+$/g, "") || "model";
  }
  $("model-name").addEventListener("input", function () { $("model-name").dataset.typed = "1"; });
  $("add-model").addEventListener("submit", function (e) {
    e.preventDefault();
    var source = modelFrom() === "workspace" ? $("ws-model").value : $("model-path").value.trim();
    var name = $("model-name").value.trim();
    if (!source) { notice(modelFrom() === "workspace" ? "Pick a trained model from the list." : "Write the folder of the model or bundle."); return; }
    if (!/^[A-Za-z0-9_.\-]+$/.test(name)) { notice("Give the model a name of letters, digits, dash, dot or underscore, like helmets."); return; }
    var button = e.submitter || $("add-model").querySelector("button");
    button.disabled = true;
    change("v1/edge/models", "POST", { source: source, name: name }, function (answer) {
      notice("Added " + answer.name + " version " + answer.version + ". Now attach it to a source below.", true);
      $("pipeline-model").value = answer.name;
    }).catch(function () {}).then(function () { button.disabled = false; });
  });

  // watch a source
  document.querySelectorAll("[data-source]").forEach(function (b) {
    b.addEventListener("click", function () { $("source").value = b.dataset.source; $("source").focus(); });
  });
  $("fps").addEventListener("input", function () { $("fps-value").textContent = $("fps").value; });
  $("add-pipeline").addEventListener("submit", function (e) {
    e.preventDefault();
    var body = { source: $("source").value.trim(), model: $("pipeline-model").value, fps: Number($("fps").value),
                 rules: [], start: true };
    if ($("pipeline-name").value.trim()) body.name = $("pipeline-name").value.trim();
    if (!body.model) { notice("Add a model first: a pipeline runs one of this server's models."); return; }
    if (!body.source || body.source === "rtsp://") { notice("Write the source: a video file, a folder, camera:0 or a stream address."); return; }
    try { if ($("with-rule").checked) body.rules.push(pipelineRule.read()); } catch (err) { notice(err.message); return; }
    change("v1/edge/pipelines", "POST", body, function (p) {
      notice("Started " + (p.name || p.id) + ". The Live view shows what it sees.", true);
      state.live = p.id;
    }).catch(function () {});
  });

  // -- live view --------------------------------------------------------------------------------------------
  $("live-pipeline").addEventListener("change", function () { state.live = $("live-pipeline").value; state.liveUrl = null; renderLive(); });
  function renderLive() {
    var p = state.pipelines.filter(function (x) { return x.id === (state.live || $("live-pipeline").value); })[0];
    $("live-empty").hidden = !!p;
    $("live").hidden = !p;
    if (!p) return;
    state.live = p.id;
    var w = STATE_WORDS[p.state] || ["off", p.state];
    $("live-pill").className = "pill pill-" + w[0];
    $("live-state").textContent = w[1];
    // a file is read as fast as the model goes; the cap counts frames per second of video there
    $("live-fps").textContent = num(p.fps, 1) + " frames a second" + (p.fps_cap ? (p.source_kind === "file"
      ? " (up to " + p.fps_cap + " from each second of video)" : " (at most " + p.fps_cap + ")") : "");
    $("live-facts").innerHTML = "";
    [["Source", (KIND_WORDS[p.source_kind] || "") + ": " + p.source], ["Model", p.model + " v" + p.model_version],
     ["Frames", String(p.frames || 0)], ["Skipped", String(p.dropped || 0)]].forEach(function (f) {
      $("live-facts").appendChild(el("div", {}, [el("dt", { text: f[0] }), el("dd", { text: f[1] })]));
    });
    $("live-error").hidden = !p.last_error;
    $("live-error").textContent = p.last_error ? "Last problem: " + p.last_error : "";
    renderAnswer(p.last_answer);
    var rules = $("live-rules");
    rules.innerHTML = "";
    (p.rules || []).forEach(function (r) {
      rules.appendChild(el("li", {}, [el("span", { text: "When " + ruleWords(r) }), el("button", {
        type: "button", cls: "btn-small danger", text: "Remove", onclick: function () {
          change("v1/edge/pipelines/" + encodeURIComponent(p.id) + "/rules/" + encodeURIComponent(r.id), "DELETE").catch(function () {});
        } })]));
    });
    if (!(p.rules || []).length) rules.appendChild(el("li", { cls: "hint", text: "No rule: the model answers, but nothing makes an event." }));
    var m = modelByName(p.model);
    if ($("rule-form").dataset.model !== p.model) { liveRule.setLabels(m ? m.labels : [], isDetector(m)); $("rule-form").dataset.model = p.model; }
  }
  function renderAnswer(a) {
    var box = $("live-answer");
    box.innerHTML = "";
    if (!a) { box.appendChild(el("p", { cls: "hint", text: "No answer yet." })); return; }
    var entries;
    if (a.boxes) {
      box.appendChild(el("div", { cls: "top-label", text: a.boxes.length ? a.boxes.length + (a.boxes.length === 1 ? " object found" : " objects found") : "No objects found" }));
      entries = a.boxes.map(function (b) { return [b.label, b.score]; });
    } else {
      box.appendChild(el("div", { cls: "top-label", text: a.sure === false ? "Not sure (closest: " + a.label + ")" : (a.label || "?") }));
      var scores = a.scores || {};
      entries = Object.keys(scores).map(function (k) { return [k, scores[k]]; }).sort(function (x, y) { return y[1] - x[1]; });
    }
    var list = el("ol", { cls: "bars" });
    entries.slice(0, 6).forEach(function (e) {
      list.appendChild(el("li", {}, [el("span", { cls: "bar-label", title: e[0], text: e[0] }),
        el("div", { cls: "bar-track" }, [el("div", { cls: "bar-fill", style: "width:" + Math.round(e[1] * 100) + "%" })]),
        el("span", { cls: "bar-value", text: pct(e[1]) })]));
    });
    box.appendChild(list);
  }
  function refreshFrame() {
    if (state.tab !== "live" || !state.live) return;
    image($("live-frame"), "v1/edge/pipelines/" + encodeURIComponent(state.live) + "/frame.jpg", function () {
      $("live-wait").hidden = false; $("live-frame").hidden = true;
    }).then(function (ok) { if (ok) { $("live-wait").hidden = true; $("live-frame").hidden = false; } });
  }
  $("rule-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var rule;
    try { rule = liveRule.read(); } catch (err) { notice(err.message); return; }
    change("v1/edge/pipelines/" + encodeURIComponent(state.live) + "/rules", "POST", rule, function () {
      notice("The rule is set: new frames are checked against it.", true);
      $("live-add-rule").open = false;
    }).catch(function () {});
  });

  // -- events -------------------------------------------------------------------------------------------------
  function refreshEvents() {
    var params = new URLSearchParams({ limit: "60" });
    if ($("f-pipeline").value) params.set("pipeline", $("f-pipeline").value);
    if ($("f-model").value) params.set("model", $("f-model").value);
    if ($("f-label").value) params.set("label", $("f-label").value);
    // the server keeps times as ISO text with "+00:00" and compares them as text
    if ($("f-since").value) params.set("since", new Date(Date.now() - Number($("f-since").value) * 60000).toISOString().replace("Z", "+00:00"));
    return api("v1/edge/events?" + params).then(function (answer) {
      var events = answer.events || [];
      var box = $("events");
      var seen = box.dataset.key, key = events.map(function (e) { return e.id; }).join(",");
      $("events-empty").hidden = events.length > 0;
      if (seen === key) return;
      box.dataset.key = key;
      box.innerHTML = "";
      events.forEach(function (ev) {
        var img = el("img", { alt: "Snapshot of event " + ev.id, loading: "lazy" });
        var words = (ev.label || "?") + " " + pct(ev.score);
        var meta = when(ev.time) + " · " + (ev.model || "") + (ev.version ? " v" + ev.version : "") + " · " + (ev.source || ev.pipeline || "");
        if (ev.snapshot) image(img, ev.snapshot.replace(/^\//, ""));
        box.appendChild(el("div", { cls: "event", title: "Click to enlarge", onclick: function () {
          $("viewer-img").src = img.src; $("viewer-text").textContent = words + " · " + meta; $("viewer").hidden = false;
        } }, [el("div", { cls: "snap" }, [img]), el("div", { cls: "body" }, [el("div", { cls: "what", text: words }), el("div", { cls: "meta", text: meta })])]));
      });
    }).catch(function (error) { notice(error.message); });
  }
  $("event-filters").addEventListener("submit", function (e) { e.preventDefault(); refreshEvents(); });
  ["f-pipeline", "f-model", "f-label", "f-since"].forEach(function (id) { $(id).addEventListener("change", refreshEvents); });
  $("viewer").addEventListener("click", function () { $("viewer").hidden = true; });

  // -- charts (small SVG line charts, drawn here) ------------------------------------------------------------
  var SVG = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }
  function chart(title, now, series, opts) {
    // series: lists of [time ms, value or null] over opts.start..opts.end; the first is filled, the
    // second dashed; a null leaves a gap, a lone point is a dot
    var W = 300, H = 90, L = 30, B = 14;
    var all = [];
    series.forEach(function (points) { points.forEach(function (p) { if (typeof p[1] === "number") all.push(p[1]); }); });
    var max = Math.max(opts.min || 1, Math.max.apply(null, all.concat([0])) * 1.15);
    var x = function (t) { return L + (W - L - 4) * Math.max(0, Math.min(1, (t - opts.start) / (opts.end - opts.start))); };
    var y = function (v) { return H - B - (H - B - 6) * v / max; };
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, preserveAspectRatio: "none", role: "img", "aria-label": title });
    [0, max / 2, max].forEach(function (v) {
      svg.appendChild(svgEl("line", { x1: L, x2: W, y1: y(v), y2: y(v), class: "axis" }));
      var t = svgEl("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end", class: "tick" });
      t.textContent = v >= 100 ? Math.round(v) : v.toFixed(v >= 10 ? 0 : 1);
      svg.appendChild(t);
    });
    series.forEach(function (points, k) {
      var runs = [], run = [];
      points.forEach(function (p) {
        if (typeof p[1] === "number") run.push([x(p[0]), y(p[1])]);
        else if (run.length) { runs.push(run); run = []; }
      });
      if (run.length) runs.push(run);
      runs.forEach(function (r) {
        if (r.length === 1) { svg.appendChild(svgEl("circle", { cx: r[0][0], cy: r[0][1], r: 2.5, class: k ? "dot2" : "dot1" })); return; }
        var d = r.map(function (p, i) { return (i ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1); }).join(" ");
        if (k === 0 && opts.area) svg.appendChild(svgEl("path", { d: d + " L" + r[r.length - 1][0].toFixed(1) + " " + y(0) + " L" + r[0][0].toFixed(1) + " " + y(0) + " Z", class: "area" }));
        svg.appendChild(svgEl("path", { d: d, class: k ? "line2" : "line1" }));
      });
    });
    var t0 = svgEl("text", { x: L, y: H - 2, class: "tick" }); t0.textContent = opts.from || "";
    var t1 = svgEl("text", { x: W - 2, y: H - 2, "text-anchor": "end", class: "tick" }); t1.textContent = "now";
    svg.appendChild(t0); svg.appendChild(t1);
    var head = el("div", { cls: "t" }, [el("span", { text: title }), el("b", { text: now })]);
    var box = el("div", { cls: "chart" }, [head, svg]);
    if (opts.legend) box.appendChild(el("div", { cls: "legend" }, [el("i"), opts.legend[0], el("i", { cls: "l2" }), opts.legend[1]]));
    return box;
  }
  var BUCKET_S = 10;  // the server's stats interval (EDGE_API.md: a minute or 10 s)
  function bucketWords(series) {
    var s = bucketSeconds(series);
    return s === 60 ? "a minute" : s % 60 === 0 ? "per " + s / 60 + " minutes" : "per " + s + " s";
  }
  function bucketSeconds(series) {
    var best = null;
    for (var i = 1; i < series.length; i++) {
      var d = (Date.parse(series[i].t) - Date.parse(series[i - 1].t)) / 1000;
      if (d > 0 && (best === null || d < best)) best = d;
    }
    return best && (best === 60 || best === 10) ? best : BUCKET_S;
  }
  function grid(series, key, step, start, end, missing) {
    // every interval from start to end: the server lists only those with data
    var byTime = {};
    series.forEach(function (p) { var t = Date.parse(p.t); if (!isNaN(t)) byTime[Math.round(t / 1000 / step)] = p[key]; });
    var out = [];
    for (var b = Math.ceil(start / 1000 / step); b * step * 1000 <= end; b++) {
      out.push([b * step * 1000, b in byTime ? byTime[b] : missing]);
    }
    return out;
  }
  function last(values) { for (var i = values.length - 1; i >= 0; i--) if (typeof values[i] === "number") return values[i]; return null; }
  function refreshCharts() {
    var minutes = Number($("chart-minutes").value);
    return api("v1/edge/stats?minutes=" + minutes).then(function (answer) {
      var box = $("charts");
      box.innerHTML = "";
      var models = (answer.models || []).filter(function (m) { return (m.series || []).length; });
      var pipes = (answer.pipelines || []).filter(function (p) { return (p.series || []).length; });
      $("charts-empty").hidden = models.length + pipes.length > 0;
      var end = Date.now(), start = end - minutes * 60000;
      var span = { start: start, end: end, from: "-" + (minutes >= 60 ? minutes / 60 + " h" : minutes + " min") };
      var opts = function (extra) { return Object.assign({}, span, extra || {}); };
      models.forEach(function (m) {
        var s = m.series, step = bucketSeconds(s), every = bucketWords(s);
        var pick = function (k) { return s.map(function (p) { return p[k]; }); };
        var total = Math.round(pick("requests").reduce(function (a, b) { return a + (b || 0); }, 0));
        var errors = Math.round(pick("errors").reduce(function (a, b) { return a + (b || 0); }, 0));
        box.appendChild(el("div", { cls: "chart-row" }, [
          el("h4", { text: m.name + (m.version ? " · version " + m.version : "") + " · " + total + " answers in the last " + (minutes >= 60 ? "hour" : minutes + " minutes") }),
          el("div", { cls: "trio" }, [
            chart("Answers " + every, num(last(pick("requests")) || 0), [grid(s, "requests", step, start, end, 0)], opts({ area: true })),
            chart("Time to answer (ms)", num(last(pick("p50_ms")), 1) + " / " + num(last(pick("p95_ms")), 1),
              [grid(s, "p50_ms", step, start, end, null), grid(s, "p95_ms", step, start, end, null)],
              opts({ legend: ["half are faster (p50)", "95 in 100 are faster (p95)"] })),
            chart("Errors " + every, errors ? errors + " of " + total + " answers" : "none", [grid(s, "errors", step, start, end, 0)], opts({ area: true }))
          ])
        ]));
      });
      pipes.forEach(function (p) {
        var pipe = state.pipelines.filter(function (x) { return x.id === p.id; })[0];
        var step = bucketSeconds(p.series);
        box.appendChild(el("div", { cls: "chart-row" }, [
          el("h4", { text: "Pipeline " + (pipe ? pipe.name || pipe.id : p.id) }),
          el("div", { cls: "trio" }, [
            chart("Frames a second", num(last(p.series.map(function (v) { return v.fps; })), 1), [grid(p.series, "fps", step, start, end, null)], opts({ area: true })),
            chart("Frames skipped " + bucketWords(p.series), num(last(p.series.map(function (v) { return v.dropped; })) || 0), [grid(p.series, "dropped", step, start, end, 0)], opts({ area: true }))
          ])
        ]));
      });
    }).catch(function (error) { notice(error.message); });
  }
  $("chart-minutes").addEventListener("change", refreshCharts);

  // -- device and log ------------------------------------------------------------------------------------------
  function gauge(name, value, fraction, small) {
    var fill = el("div", { cls: "fill" + (fraction > 0.9 ? " hot" : ""), style: "width:" + Math.round(Math.min(1, fraction || 0) * 100) + "%" });
    return el("div", { cls: "gauge" }, [el("div", { cls: "name", text: name }), el("div", { cls: "value", text: value }),
      el("div", { cls: "track" }, [fill]), small ? el("small", { text: small }) : null]);
  }
  function refreshDevice() {
    var a = api("v1/edge/device").then(function (d) {
      var box = $("device");
      box.innerHTML = "";
      box.appendChild(gauge("Processor (CPU)", num(d.cpu_percent, 0) + "%", (d.cpu_percent || 0) / 100, (d.cpu_count || "?") + " cores"));
      var mem = d.memory || {};
      box.appendChild(gauge("Memory", bytes(mem.used) + " of " + bytes(mem.total), mem.total ? mem.used / mem.total : 0));
      (d.gpus || []).forEach(function (g) {
        box.appendChild(gauge(g.name || "GPU", num(g.load_percent, 0) + "% busy", (g.load_percent || 0) / 100,
          "memory " + bytes(g.memory_used) + " of " + bytes(g.memory_total)));
      });
      $("device-hint").textContent = (d.gpus || []).length ? "" : "No graphics card (GPU) found: models run on the processor.";
    });
    var b = api("v1/edge/logs?lines=200").then(function (answer) {
      var pre = $("log");
      var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
      pre.textContent = (answer.lines || []).join("\n") || "The log is empty.";
      if ($("log-follow").checked || atEnd) pre.scrollTop = pre.scrollHeight;
    });
    return Promise.all([a, b]).catch(function (error) { notice(error.message); });
  }

  // -- polling ------------------------------------------------------------------------------------------------
  function setStatus(kind, text) {
    $("status").className = "pill pill-" + kind;
    $("status-text").textContent = text;
  }
  function refreshStatus() {
    return api("v1/edge/status").then(function (s) {
      state.models = s.models || [];
      state.pipelines = s.pipelines || [];
      if (state.eventsTotal && s.events_total > state.eventsTotal && state.tab === "events") refreshEvents();
      state.eventsTotal = s.events_total || 0;
      $("events-count").textContent = String(state.eventsTotal);
      $("events-count").hidden = !state.eventsTotal;
      var failed = state.pipelines.filter(function (p) { return p.state === "failed" || p.state === "reconnecting"; }).length;
      setStatus(failed ? "wait" : "ok", failed ? failed + (failed === 1 ? " source has a problem" : " sources have a problem") : "Edge server running");
      if (state.connected === false) hideNotice();
      state.connected = true;
      renderModels();
      renderPipelines();
      if (state.tab === "live") renderLive();
    }).catch(function (error) {
      state.connected = false;
      setStatus("bad", error.status === 401 || error.status === 403 ? "Token needed" : "Not answering");
      notice(error.message);
    });
  }
  function refreshWorkspace() {
    return api("v1/edge/workspace-models").then(function (answer) {
      state.workspace = answer.models || [];
      renderWorkspace();
      suggestName();
    }).catch(function () { state.workspace = []; renderWorkspace(); });
  }
  function refreshTab() {
    if (state.tab === "live") { renderLive(); refreshFrame(); }
    if (state.tab === "events") refreshEvents();
    if (state.tab === "charts") refreshCharts();
    if (state.tab === "device") refreshDevice();
  }
  function refreshAll() { refreshStatus().then(refreshTab); refreshWorkspace(); }
  function every(ms, fn) { setInterval(function () { if (!document.hidden) fn(); }, ms); }
  every(2000, refreshStatus);
  every(1000, refreshFrame);
  every(5000, function () { if (state.tab === "events") refreshEvents(); });
  every(10000, function () { if (state.tab === "charts") refreshCharts(); });
  every(3000, function () { if (state.tab === "device") refreshDevice(); });
  refreshStatus().then(function () { showTab(location.hash.slice(1) || "overview"); });
  refreshWorkspace();
})();
