(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };
  var token = sessionStorage.getItem("modeldesk-token") || "";  // sent as a header, never in a URL
  var labelsCount = 0;
  $("token").value = token;

  function headers() { return token ? { "Authorization": "Bearer " + token } : {}; }
  function api(path, options) {
    options = options || {};
    options.headers = Object.assign(headers(), options.headers || {});
    return fetch(path, options).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = { error: text || response.statusText }; }
        if (!response.ok) {
          var error = new Error((body && body.error) || ("HTTP " + response.status));
          error.status = response.status;
          throw error;
        }
        return body;
      });
    });
  }
  function setStatus(kind, text) {
    $("status").className = "pill pill-" + kind;
    $("status-text").textContent = text;
  }
  function showError(message) {
    $("error").textContent = message;
    $("error").hidden = !message;
  }
  function pct(p) {
    if (p > 0 && p < 0.001) return "<0.1%";
    return (p * 100).toFixed(p >= 0.995 || p < 0.001 ? 0 : 1) + "%";
  }
  function needToken(message) {
    $("token-form").classList.add("needed");
    setStatus("bad", "Token needed");
    showError(message || "This service needs an access token. Enter it at the top right.");
  }

  function renderCard(card) {
    var pre = card.preprocessing || {};
    var metrics = card.metrics || {};
    var comp = card.compression;
    var title = card.name || card.template || "Image classifier";
    $("model-name").textContent = title;
    $("model-id").textContent = card.id;
    document.title = title + " · ModelDesk";
    labelsCount = (card.labels || []).length;
    var facts = [
      ["Task", (card.task || "").replace(/-/g, " ")],
      ["Labels", String(labelsCount)],
      ["Input", (pre.size || "?") + " × " + (pre.size || "?") + " px"],
      ["Template", card.template || "—"],
    ];
    if (typeof metrics.accuracy === "number") facts.push(["Accuracy", pct(metrics.accuracy)]);
    if (typeof metrics.macro_f1 === "number") facts.push(["Macro F1", metrics.macro_f1.toFixed(3)]);
    facts.push(["Compression", comp ? comp.chosen : "none (fp32)"]);
    if (card.created) facts.push(["Created", String(card.created).replace("T", " ").slice(0, 16)]);
    $("facts").innerHTML = "";
    facts.forEach(function (f) {
      var div = document.createElement("div");
      var dt = document.createElement("dt"); dt.textContent = f[0];
      var dd = document.createElement("dd"); dd.textContent = f[1]; dd.title = f[1];
      div.appendChild(dt); div.appendChild(dd); $("facts").appendChild(div);
    });
    $("labels").innerHTML = "";
    (card.labels || []).slice(0, 60).forEach(function (l) {
      var s = document.createElement("span"); s.textContent = l; $("labels").appendChild(s);
    });
    if (labelsCount > 60) {
      var s = document.createElement("span"); s.textContent = "+" + (labelsCount - 60) + " more"; $("labels").appendChild(s);
    }
    $("card-json").textContent = JSON.stringify(card, null, 2);
  }

  function renderCurl() {
    var base = window.location.origin;
    var auth = token ? " \\\n  -H 'Authorization: Bearer " + token.replace(/./g, "•") + "'" : "";
    $("curl").textContent = "curl -F file=@photo.jpg" + auth + " \\\n  " + base + "/v1/predict";
    $("docs-link").href = "docs";
  }

  function renderPrediction(prediction, latency, roundTrip) {
    $("result-empty").hidden = true;
    $("result").hidden = false;
    $("top-label").textContent = prediction.label;
    $("top-score").textContent = pct(prediction.score);
    var entries = Object.keys(prediction.scores).map(function (k) { return [k, prediction.scores[k]]; });
    entries.sort(function (a, b) { return b[1] - a[1]; });
    var shown = entries.slice(0, 10);
    var bars = $("bars");
    bars.innerHTML = "";
    shown.forEach(function (e) {
      var li = document.createElement("li");
      var name = document.createElement("span"); name.className = "bar-label"; name.textContent = e[0]; name.title = e[0];
      var track = document.createElement("div"); track.className = "bar-track";
      var fill = document.createElement("div"); fill.className = "bar-fill";
      fill.style.width = Math.max(0, Math.min(100, e[1] * 100)) + "%";
      track.appendChild(fill);
      var value = document.createElement("span"); value.className = "bar-value"; value.textContent = pct(e[1]);
      li.appendChild(name); li.appendChild(track); li.appendChild(value); bars.appendChild(li);
    });
    $("more").textContent = entries.length > shown.length ? (entries.length - shown.length) + " more labels below 1%" : "";
    $("latency").hidden = false;
    $("latency").textContent = latency.toFixed(1) + " ms inference · " + roundTrip.toFixed(0) + " ms total";
  }

  function predict(file) {
    if (!file) return;
    if (file.type && file.type.indexOf("image/") !== 0) { showError(file.name + " is not an image."); return; }
    showError("");
    var url = URL.createObjectURL(file);
    var img = $("preview");
    img.onload = function () {
      $("file-meta").textContent = file.name + " · " + img.naturalWidth + " × " + img.naturalHeight + " px · " + (file.size / 1024).toFixed(0) + " KB";
    };
    img.src = url; img.hidden = false; $("drop-empty").hidden = true; $("replace").hidden = false;
    $("busy").hidden = false;
    var form = new FormData();
    form.append("file", file, file.name);
    var start = performance.now();
    api("v1/predict", { method: "POST", body: form }).then(function (body) {
      renderPrediction(body.predictions[0], body.latency_ms, performance.now() - start);
    }).catch(function (error) {
      if (error.status === 401) needToken(error.message); else showError(error.message);
    }).then(function () { $("busy").hidden = true; });
  }

  function load() {
    renderCurl();
    api("readyz").then(function (ready) {
      setStatus("ok", "Ready" + (ready.providers ? " · " + ready.providers[0].replace("ExecutionProvider", "") : ""));
      $("token-form").classList.remove("needed");
      showError("");
      return api("v1/model").then(renderCard);
    }).catch(function (error) {
      if (error.status === 401) needToken();
      else if (error.status === 503) { setStatus("wait", "Loading model"); setTimeout(load, 1000); }
      else { setStatus("bad", "Offline"); showError("Cannot reach the service: " + error.message); }
    });
  }

  var drop = $("drop");
  ["dragenter", "dragover"].forEach(function (type) {
    drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    drop.addEventListener(type, function (e) { e.preventDefault(); drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (e) { predict(e.dataTransfer.files[0]); });
  drop.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); $("file").click(); } });
  $("file").addEventListener("change", function (e) { predict(e.target.files[0]); e.target.value = ""; });
  window.addEventListener("paste", function (e) {
    var items = (e.clipboardData || {}).files || [];
    if (items.length) predict(items[0]);
  });
  $("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    token = $("token").value.trim();
    sessionStorage.setItem("modeldesk-token", token);
    load();
  });
  load();
})();
